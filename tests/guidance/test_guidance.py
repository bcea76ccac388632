"""Guidance for small models (daemon/guidance/guidance.py), each help driven by a scripted model.

MockModel scripts ``likelihood`` and ``score`` by text: a key ``(marker, text)`` scores ``text``
after any prompt that contains ``marker``, so a test says which skill description the question
fits best without any real model.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.prompt import PLAIN
from edge_agentd.agent.registry import SkillOptions
from edge_agentd.guidance.focus import MIN_FOCUS_PARTS, result_parts
from edge_agentd.guidance.guidance import (
    ANSWER_HEAD,
    SKILL_HEAD,
    Guidance,
    candidates_for,
    named_calls,
)
from edge_agentd.guidance.phrases import (
    fresh_phrases,
    likeliest_phrase,
    phrases_to_try,
    question_phrases,
)

QUESTION = "How damp is the cellar?"


def house() -> Registry:
    registry = Registry()

    @registry.skill(examples=["Is the processor running hot?"])
    def cpu_temperature() -> dict[str, Any]:
        """The CPU temperature in °C."""
        return {"value": 48.3, "unit": "°C"}

    @registry.skill(
        calls=lambda: [({"name": "bme280"}, "humidity in %RH"), ({"name": "probe"}, "°C")]
    )
    def read_sensor(name: str) -> dict[str, Any]:
        """Current value of one sensor."""
        return {"sensor": name, "value": 61.0 if name == "bme280" else 9.5}

    @registry.skill
    def resolve_date(text: str) -> dict[str, Any]:
        """Turn a date like 'next friday' into YYYY-MM-DD."""
        return {"date": "2026-12-04", "asked": text}

    return registry


def answer_prompt(model: MockModel) -> str:
    """The prompt after which the model chose among the rendered answers (the last scored)."""
    return next(p for p, o in reversed(model.scored) if o[0].startswith(ANSWER_HEAD))


def calls(state: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(e.skill_name, e.arguments) for e in state.stream.root if e.type == "CallSkillAction"]


def test_each_skill_is_a_candidate_and_each_call_it_lists_as_ready_is_one_too() -> None:
    registry = house()
    found = [c for spec in registry for c in candidates_for(spec, PLAIN)]
    assert [(c.skill_name, c.arguments) for c in found] == [
        ("cpu_temperature", {}),
        ("read_sensor", {"name": "bme280"}),
        ("read_sensor", {"name": "probe"}),
        ("resolve_date", None),
    ]
    # The text a question is scored after says what the skill, its example and its call get.
    assert "The CPU temperature in °C." in found[0].description
    assert "- Is the processor running hot?" in found[0].description
    assert "humidity in %RH" in found[1].description
    assert "humidity" not in found[2].description


def test_the_first_skill_is_the_one_whose_description_the_question_fits_best() -> None:
    model = MockModel(
        [],
        scores={
            ("humidity in %RH", f" {QUESTION}"): -3.0,
            ("CPU temperature", f" {QUESTION}"): -9.0,
            ANSWER_HEAD: -1.0,
            f"{ANSWER_HEAD}The bme280 sensor is": 0.0,
        },
    )
    # No skill here names the cellar, so the answer says it cannot tell (the loop's grounding,
    # tests/agent/test_grounding.py); this test is about the choice of skill.
    guidance = Guidance(know_subject=False)
    state = Agent(model, house(), guidance=guidance, grounding=Grounding()).run(
        QUESTION, max_iterations=4
    )
    assert calls(state) == [("read_sensor", {"name": "bme280"})]
    assert state.outcome == "answered"
    # The action was chosen by scoring, not generated. The sentence the engine renders from the
    # result ("The bme280 sensor is 61.0.") is not the cellar's, so the grounding rules refuse it:
    # it is not offered, and the one sentence left is "I cannot tell", in one answer, no retry.
    assert state.final_answer == "I cannot tell: no result gives the cellar."
    assert not [e for e in state.stream.root if e.type == "ValidationErrorObservation"]
    assert state.stream.root[-1].made_by == "engine"
    assert model.prompts == []
    action = state.stream.root[0]
    assert json.loads(action.raw) == {"skill_name": "read_sensor", "arguments": {"name": "bme280"}}
    # Every candidate was scored against the question, once (the other scored texts are the
    # result's line names, read as the part that answers it).
    scored_texts = {
        texts[0]
        for prompt, texts in model.scored
        if texts[0].startswith(" ") and "answers it:" not in prompt
    }
    assert scored_texts == {f" {QUESTION}"}


def station() -> Registry:
    registry = Registry()

    @registry.skill(
        calls=lambda: [
            ({"name": "bme280", "quantity": "temperature"}, "the temperature in °C"),
            ({"name": "bme280", "quantity": "humidity"}, "the humidity in %RH"),
        ]
    )
    def read_sensor(name: str, quantity: str) -> dict[str, Any]:
        """Current value of one sensor."""
        value, unit = (22.7, "°C") if quantity == "temperature" else (41.5, "%RH")
        return {"sensor": name, "readings": [{"quantity": quantity, "value": value, "unit": unit}]}

    return registry


def test_a_call_whose_own_argument_the_question_asks_for_is_chosen_among_those_alone() -> None:
    question = "What is the humidity?"
    model = MockModel(
        ['{"final_answer": "The humidity is 41.5 %RH."}'],
        # A near tie the other way: the temperature's call fits the question a little better.
        scores={
            ("the temperature in °C", f" {question}"): -3.0,
            ("the humidity in %RH", f" {question}"): -3.1,
        },
    )
    state = Agent(model, station(), guidance=Guidance(), grounding=Grounding()).run(
        question, max_iterations=4
    )
    assert calls(state) == [("read_sensor", {"name": "bme280", "quantity": "humidity"})]
    assert state.final_answer == "The humidity is 41.5 %RH."
    # A question whose head noun no call takes goes by the scores alone.
    other = "How damp is it?"
    model = MockModel(
        ['{"final_answer": "It is 22.7 °C."}'],
        scores={
            ("the temperature in °C", f" {other}"): -3.0,
            ("the humidity in %RH", f" {other}"): -3.1,
        },
    )
    state = Agent(model, station(), guidance=Guidance(), grounding=Grounding()).run(
        other, max_iterations=4
    )
    assert calls(state) == [("read_sensor", {"name": "bme280", "quantity": "temperature"})]


def test_named_calls_match_a_fixed_argument_to_the_head_noun_or_its_plural() -> None:
    found = [c for spec in station() for c in candidates_for(spec, PLAIN)]
    assert [c.arguments for c in named_calls("Which temperatures are there?", found)] == [
        {"name": "bme280", "quantity": "temperature"}
    ]
    assert len(named_calls("What does the bme280 read?", found)) == 0  # no head noun
    assert named_calls("What is the pressure?", found) == []
    # A skill whose arguments the model writes has none to match.
    assert (
        named_calls("What text?", [c for spec in house() for c in candidates_for(spec, PLAIN)])
        == []
    )


def test_a_free_text_argument_is_the_likeliest_phrase_of_the_question() -> None:
    wanted = '{"skill_name": "resolve_date", "arguments": {"text": "next Friday"}}'
    model = MockModel(
        [],
        scores={("YYYY-MM-DD", " When is next Friday?"): -1.0, ANSWER_HEAD: 0.0, wanted: -2.0},
    )
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run(
        "When is next Friday?"
    )
    assert calls(state) == [("resolve_date", {"text": "next Friday"})]
    # The phrases offered were the question's own, and no text was generated for the call.
    options = next(o for _, o in model.scored if o[0].startswith(SKILL_HEAD))
    offered = [json.loads(o)["arguments"]["text"] for o in options]
    assert {"When", "next Friday", "When is next Friday"} <= set(offered)
    assert "next Friday?" not in offered
    assert model.prompts == []
    assert state.final_answer == "The date is 2026-12-04."


def test_a_phrase_the_skill_refuses_is_followed_by_the_next_likeliest_phrase() -> None:
    registry = Registry()

    @registry.skill
    def resolve_date(text: str) -> dict[str, Any]:
        """Turn a date like 'next friday' into YYYY-MM-DD."""
        if "next" not in text:
            raise ValueError(f"cannot read {text!r} as a date")
        return {"date": "2026-12-11"}

    @registry.skill
    def now() -> dict[str, Any]:
        """The current date and time."""
        return {"date": "2026-12-04"}

    def ask(question: str, first: str, second: str) -> Any:
        def phrase(text: str) -> str:
            return json.dumps({"skill_name": "resolve_date", "arguments": {"text": text}})

        scores = {("YYYY-MM-DD", f" {question}"): -1.0, ("current date", f" {question}"): -3.0}
        scores |= {phrase(first): -1.0, phrase(second): -3.0, SKILL_HEAD: -9.0}
        model = MockModel([], scores=scores)
        return Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(question)

    state = ask("When is next Friday?", "Friday", "next Friday")
    assert calls(state) == [
        ("resolve_date", {"text": "Friday"}),
        ("resolve_date", {"text": "next Friday"}),
    ]
    assert state.final_answer == "The date is 2026-12-11."
    # Two phrases refused: the whole question is tried, once, and then the next skill.
    state = ask("When is Friday?", "Friday", "is Friday")
    assert calls(state) == [
        ("resolve_date", {"text": "Friday"}),
        ("resolve_date", {"text": "is Friday"}),
        ("resolve_date", {"text": "When is Friday?"}),
        ("now", {}),
    ]
    # A skill that reads a date inside a sentence reads it there.
    state = ask("When is the Friday after next?", "Friday", "the Friday")
    assert calls(state)[-1] == ("resolve_date", {"text": "When is the Friday after next?"})
    assert state.final_answer == "The date is 2026-12-11."


def test_a_skill_that_reads_sentences_gets_the_whole_question_before_any_phrase() -> None:
    registry = Registry()

    @registry.skill(reads_sentences=True)
    def resolve_date(text: str) -> dict[str, Any]:
        """Turn a date like 'next friday' into YYYY-MM-DD."""
        if "please" in text:
            raise ValueError(f"cannot read {text!r} as a date")
        return {"date": "2026-12-06" if "after" in text else "2026-12-05"}

    def phrase(text: str) -> str:
        return json.dumps({"skill_name": "resolve_date", "arguments": {"text": text}})

    def ask(question: str) -> tuple[Any, MockModel]:
        # The model finds "tomorrow" likeliest: a phrase that means another day.
        scores = {("YYYY-MM-DD", f" {question}"): -1.0, phrase("tomorrow"): -1.0}
        scores |= {phrase("day after tomorrow"): -5.0, SKILL_HEAD: -9.0}
        model = MockModel(['{"final_answer": "It is 2026-12-06."}'], scores=scores)
        return Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(
            question, max_iterations=3
        ), model

    assert registry.get("resolve_date").reads_sentences  # type: ignore[union-attr]
    question = "What date is the day after tomorrow?"
    state, model = ask(question)
    assert calls(state) == [("resolve_date", {"text": question})]
    assert not any(o[0].startswith(SKILL_HEAD) for _, o in model.scored)  # no phrase scored
    # Refused whole, the likeliest phrase comes next, and then up to PHRASE_TRIES phrases.
    question = "The day after tomorrow, please?"
    state, model = ask(question)
    assert calls(state)[:2] == [
        ("resolve_date", {"text": question}),
        ("resolve_date", {"text": "tomorrow"}),
    ]
    fresh = fresh_phrases(question_phrases(question), ["tomorrow"])
    assert phrases_to_try(question, [question, "tomorrow"], whole_first=True) == fresh
    assert phrases_to_try(question, [question, "tomorrow", "day"], whole_first=True) == []
    # A short question is one of its own phrases: refused whole, it is not offered again.
    short = phrases_to_try("Next Friday?", ["Next Friday?"], whole_first=True)
    assert short == ["Next", "Friday"]


def test_a_longer_phrase_nearly_as_likely_as_the_likeliest_is_the_one_taken() -> None:
    phrases = question_phrases("What date is next Friday?")
    scores = {"Friday": -33.3, "next Friday": -33.5, "is next Friday": -34.0, "date": -40.0}
    chosen = likeliest_phrase(phrases, [scores.get(p, -99.0) for p in phrases])
    # "is next Friday" holds "next Friday", and is within the margin of the likeliest.
    assert chosen == "is next Friday"
    scores["is next Friday"] = -34.5  # beyond the margin of "Friday": not taken
    assert likeliest_phrase(phrases, [scores.get(p, -99.0) for p in phrases]) == "next Friday"
    # A phrase that does not hold the likeliest one is never taken instead of it.
    scores = {"Friday": -33.3, "What date": -33.4}
    assert likeliest_phrase(phrases, [scores.get(p, -99.0) for p in phrases]) == "Friday"


def test_a_run_calls_the_longer_phrase_when_it_is_nearly_as_likely() -> None:
    def phrase(text: str) -> str:
        return json.dumps({"skill_name": "resolve_date", "arguments": {"text": text}})

    question = "When is next Friday?"
    model = MockModel(
        ['{"final_answer": "Next Friday is 2026-12-11."}'],
        scores={
            ("YYYY-MM-DD", f" {question}"): -1.0,
            ANSWER_HEAD: 0.0,
            phrase("Friday"): -1.0,
            phrase("next Friday"): -1.5,
        },
    )
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert calls(state) == [("resolve_date", {"text": "next Friday"})]


def test_after_a_refused_phrase_no_part_of_it_is_offered() -> None:
    phrases = question_phrases("What weekday will it be in 10 days?")
    assert fresh_phrases(phrases, []) == phrases
    after = fresh_phrases(phrases, ["10 days"])
    assert "in 10 days" in after and "weekday" in after
    assert not {"10", "days", "10 days"} & set(after)
    # After PHRASE_TRIES refusals, the whole question once, then nothing.
    question = "  What is   Christmas Eve?"
    assert phrases_to_try(question, ["What", "is"]) == ["What is Christmas Eve?"]
    assert phrases_to_try(question, ["What", "is", "What is Christmas Eve?"]) == []
    assert phrases_to_try(question, ["What"]) == fresh_phrases(question_phrases(question), ["What"])


def test_arguments_no_phrase_can_fill_are_written_by_the_model_after_a_forced_head() -> None:
    registry = Registry()

    @registry.skill
    def set_timer(minutes: int) -> str:
        """Start a kitchen timer."""
        return f"set for {minutes} min"

    model = MockModel(
        ['{"skill_name": "set_timer", "arguments": {"minutes": 5}}', '{"final_answer": "Set."}'],
        scores={("kitchen timer", " Five minutes please"): 0.0},
    )
    state = Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(
        "Five minutes please"
    )
    assert calls(state) == [("set_timer", {"minutes": 5})]
    assert model.calls[0]["prefix"] == f'{SKILL_HEAD}set_timer", "arguments": {{'


def test_after_a_result_the_model_may_go_on_but_never_repeats_a_call() -> None:
    # The model prefers another call over answering: the best candidate was called already, so
    # the next best is taken; with every candidate used up, it answers.
    model = MockModel(
        [],
        scores={
            ("humidity in %RH", " Compare them"): -1.0,
            ("°C", " Compare them"): -2.0,
            SKILL_HEAD: 0.0,
            ANSWER_HEAD: -50.0,
        },
    )
    registry = Registry()

    @registry.skill(
        calls=lambda: [({"name": "bme280"}, "humidity in %RH"), ({"name": "probe"}, "°C")]
    )
    def read_sensor(name: str) -> dict[str, Any]:
        """Current value of one sensor."""
        return {"sensor": name}

    guidance = Guidance(go_on=True)
    state = Agent(model, registry, guidance=guidance, grounding=Grounding()).run(
        "Compare them", max_iterations=8
    )
    assert calls(state) == [
        ("read_sensor", {"name": "bme280"}),
        ("read_sensor", {"name": "probe"}),
    ]
    assert state.final_answer == "The sensor is bme280."


def test_the_answer_bias_leans_the_choice_after_a_result_toward_answering() -> None:
    scores = {("CPU", " How hot?"): 0.0, SKILL_HEAD: -1.0, ANSWER_HEAD: -2.5}
    made = {}
    for bias in (2.0, 1.0):
        model = MockModel([], scores=scores)
        registry = house()
        registry.remove("resolve_date")  # every candidate left has its arguments fixed
        guidance = Guidance(go_on=True, answer_bias=bias)
        state = Agent(model, registry, guidance=guidance, grounding=Grounding()).run("How hot?")
        assert state.outcome == "answered"
        made[bias] = len(calls(state))
    # With bias 2 the answer head wins at once (-2.5 + 2 >= -1); with bias 1 it does not, and
    # the run goes on to the other candidates before it answers.
    assert made[2.0] == 1
    assert made[1.0] > 1


def test_after_a_result_the_model_answers_unless_it_may_go_on() -> None:
    scores = {("CPU", " How hot?"): 0.0, SKILL_HEAD: 0.0, ANSWER_HEAD: -99.0}
    model = MockModel([], scores=scores)
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run("How hot?")
    assert calls(state) == [("cpu_temperature", {})]
    assert state.final_answer == "The cpu temperature is 48.3 °C."


def test_a_failed_call_is_followed_by_the_next_best_candidate() -> None:
    registry = Registry()

    @registry.skill
    def thermometer() -> float:
        """The room's temperature."""
        raise OSError("no thermometer is connected")

    @registry.skill
    def weather_station() -> float:
        """The temperature outside."""
        return 7.5

    scores = {("room", " How cold?"): -1.0, ("outside", " How cold?"): -2.0}
    model = MockModel([], scores=scores)
    state = Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run("How cold?")
    assert calls(state) == [("thermometer", {}), ("weather_station", {})]
    assert [e.type for e in state.stream.root][1] == "ToolErrorObservation"
    assert state.final_answer == "The weather station is 7.5."


def test_the_system_prompt_shows_how_answers_read_and_favours_no_skill() -> None:
    guided = Agent(
        MockModel([]), house(), guidance=Guidance(), grounding=Grounding()
    ).system_prompt()
    plain = Agent(MockModel([]), house(), grounding=Grounding()).system_prompt()
    assert "How answers read" in guided
    assert '"skill_name": "cpu_temperature"' not in guided
    assert 'Example: {"skill_name": "cpu_temperature"' in plain


def test_the_last_allowed_step_answers() -> None:
    model = MockModel(
        [], scores={("CPU", " How hot is the CPU?"): 0.0, SKILL_HEAD: 0.0, ANSWER_HEAD: -99.0}
    )
    # (Not "How hot is it?": its subject is "hot", which no skill here reads.)
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run(
        "How hot is the CPU?", max_iterations=2
    )
    assert len(calls(state)) == 1
    assert state.outcome == "answered"
    assert state.final_answer == "The CPU temperature is 48.3 °C."


def test_the_result_turn_repeats_the_question() -> None:
    model = MockModel([], scores={("CPU", " Hot?"): 0.0})
    agent = Agent(model, house(), guidance=Guidance(know_subject=False), grounding=Grounding())
    state = agent.run("Hot?")
    assert "The question was: Hot?" in agent.render_prompt(state)
    # The answer was chosen after that turn (among "I cannot tell" and the CPU's).
    assert "The question was: Hot?" in answer_prompt(model)
    plain = MockModel(
        ['{"skill_name": "cpu_temperature", "arguments": {}}', '{"final_answer": "x"}']
    )
    Agent(plain, house(), grounding=Grounding()).run("Hot?")
    assert "The question was" not in plain.prompts[-1]


def test_prompts_stay_append_only_under_guidance() -> None:
    model = MockModel(
        [], scores={("YYYY-MM-DD", " Friday?"): 0.0, SKILL_HEAD: 0.0, ANSWER_HEAD: -5.0}
    )
    registry = house()
    registry.remove("read_sensor")
    # Not judged, the answer is "I cannot tell" or the date: the model chooses, after the rest.
    state = Agent(
        model, registry, guidance=Guidance(go_on=True, know_subject=False), grounding=Grounding()
    ).run("Friday?")
    # Each conversation prompt scored, in order: answer or go on after each result, then the
    # answer itself.
    prompts = [p for p, options in model.scored if options[0].startswith("{")]
    assert len(prompts) >= 2
    assert calls(state) == [("resolve_date", {"text": "Friday"}), ("cpu_temperature", {})]
    for earlier, later in itertools.pairwise(prompts):
        assert later.startswith(earlier)


class GenerateOnly:
    """A model with nothing but generate(): guidance falls back to letting it reply."""

    def __init__(self) -> None:
        self.replies = iter(
            ['{"skill_name": "cpu_temperature", "arguments": {}}', '{"final_answer": "Hot."}']
        )

    def generate(self, prompt: str, **kwargs: Any) -> str:
        return next(self.replies)


def test_a_model_that_cannot_score_is_left_to_reply_by_itself() -> None:
    state = Agent(GenerateOnly(), house(), guidance=Guidance(), grounding=Grounding()).run(
        "How hot?"
    )
    assert calls(state) == [("cpu_temperature", {})]
    assert state.final_answer == "Hot."


def test_guidance_must_be_a_guidance() -> None:
    with pytest.raises(TypeError, match="guidance"):
        Agent(MockModel([]), house(), guidance="yes", grounding=Grounding())  # type: ignore[arg-type]


def test_examples_and_ready_calls_are_checked() -> None:
    registry = Registry()

    def probe(name: str) -> str:
        """A probe."""
        return name

    with pytest.raises(TypeError, match="examples"):
        registry.add(probe, SkillOptions(examples="What does the probe read?"))
    with pytest.raises(TypeError, match="calls"):
        registry.add(probe, SkillOptions(calls=[({"name": "a"}, "")]))  # type: ignore[arg-type]
    listed = [({"name": "a"}, "the a probe"), ({"nmae": "b"}, "a typo"), ({"name": 3}, "")]
    spec = registry.add(
        probe, SkillOptions(examples=["  What does\nthe probe read? "], calls=lambda: listed)
    )
    assert spec.examples == ("What does the probe read?",)
    # A listed call whose arguments do not fit the skill is left out, not offered.
    assert spec.ready_calls() == [({"name": "a"}, "the a probe")]


def test_a_failing_list_of_calls_leaves_the_skill_to_the_model(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = Registry()

    def broken() -> list[tuple[dict[str, str], str]]:
        raise OSError("the bus is gone")

    @registry.skill(calls=broken)
    def read(name: str) -> str:
        """Read one thing."""
        return name

    (candidate,) = candidates_for(registry.get("read"), PLAIN)  # type: ignore[arg-type]
    assert candidate.arguments is None
    assert "the bus is gone" in caplog.text


def test_a_skill_whose_arguments_vary_is_called_once_per_run() -> None:
    # The phrase scores favour calling resolve_date again and again; it is tried once.
    model = MockModel(
        [], scores={("YYYY-MM-DD", " Friday?"): 0.0, SKILL_HEAD: 0.0, ANSWER_HEAD: -99.0}
    )
    registry = house()
    registry.remove("read_sensor")
    registry.remove("cpu_temperature")
    state = Agent(model, registry, guidance=Guidance(go_on=True), grounding=Grounding()).run(
        "Friday?", max_iterations=5
    )
    assert [name for name, _ in calls(state)] == ["resolve_date"]
    assert state.final_answer == "The date is 2026-12-04."


def test_a_result_turn_names_the_part_the_question_is_likeliest_after() -> None:
    registry = Registry()

    @registry.skill
    def machine_status() -> dict[str, object]:
        """How the machine is doing."""
        return {
            "load": {"1min": 0.42, "5min": 0.37, "15min": 0.31},
            "memory": {"total_mib": 3793.3, "free_mib": 2367.0},
            "disks": [{"free": 12}, {"free": 80}],
        }

    question = "How much is free on the second disk?"
    model = MockModel(
        [],
        scores={
            ('disks[1] = {"free": 80}', f" {question}"): -1.0,
            ("The skill machine_status", f" {question}"): -1.0,  # it fits: no "cannot tell"
            ANSWER_HEAD: 0.0,
        },
    )
    agent = Agent(model, registry, guidance=Guidance(), grounding=Grounding())
    state = agent.run(question)
    assert state.outcome == "answered"
    # Every part was scored, each scalar of an object, each item of a list, whole, and how
    # many items the list holds.
    # (Focus scores ``path = value``; the answer's asked line, scored by its name, is apart.)
    parts = [p for p, _ in model.scored if "Questions this part answers" in p and " = " in p]
    assert len(parts) == 8 >= MIN_FOCUS_PARTS
    assert any("load.1min = 0.42" in p for p in parts)
    assert any("disks in all = 2" in p for p in parts)
    # The answer was chosen after the turn naming the likeliest part, the result whole above it.
    prompt = agent.render_prompt(state)
    assert "load 1min: 0.42\nload 5min: 0.37" in prompt
    assert prompt.index(f"The question was: {question}") < prompt.index(
        'The part of the result that answers it: disks[1] = {"free": 80}'
    )


def test_a_result_of_a_handful_of_parts_is_read_whole() -> None:
    registry = Registry()

    @registry.skill
    def clock_now() -> dict[str, str]:
        """The local date, time and weekday."""
        return {"date": "2026-12-03", "time": "16:47:07", "weekday": "Thursday"}

    fits = {("The skill clock_now", " What time is it?"): -1.0}
    model = MockModel([], scores={ANSWER_HEAD: 0.0, **fits})
    agent = Agent(model, registry, guidance=Guidance(), grounding=Grounding())
    state = agent.run("What time is it?")
    assert state.final_answer == "The time is 16:47:07."
    # Three parts: none was scored, and no part is named; the lines show them all.
    assert not [p for p, _ in model.scored if "Questions this part answers" in p and " = " in p]
    assert "The part of the result" not in agent.render_prompt(state)
    assert "time: 16:47:07\nweekday: Thursday" in agent.render_prompt(state)


def test_a_result_of_one_part_is_not_focused_and_focus_can_be_turned_off() -> None:
    assert result_parts(21.5) == [("", 21.5)]
    assert result_parts({"a": {"b": 1}, "c": [1, {"d": 2}]}) == [
        ("a.b", 1),
        ("c[0]", 1),
        ("c[1]", {"d": 2}),
        ("c in all", 2),
    ]
    registry = Registry()

    @registry.skill
    def room_temperature() -> float:
        """The room's temperature in °C."""
        return 21.5

    for guidance, skills in ((Guidance(), registry), (Guidance(focus_parts=False), house())):
        # Better than no skill at all, so a skill is called:
        fits = {(f"The skill {name}", " How warm is it?"): -1.0 for name in ("room", "cpu")}
        model = MockModel([], scores={ANSWER_HEAD: 0.0, **fits})
        agent = Agent(model, skills, guidance=guidance, grounding=Grounding())
        state = agent.run("How warm is it?")
        assert [e.type for e in state.stream.root][-2] == "SkillResultObservation"
        assert "The part of the result" not in agent.render_prompt(state)


def test_an_argument_named_for_the_questions_thing_gets_the_name_the_question_gives() -> None:
    registry = Registry()
    opened: list[str] = []

    @registry.skill
    def door_contact(door: str) -> dict[str, Any]:
        """Whether the front or back door is open or closed, and since when."""
        opened.append(door)
        if door not in {"front", "back"}:
            raise ValueError(f"no door {door!r}: front or back")
        return {"door": door, "state": "open", "since": "12:50"}

    def phrase(text: str) -> str:
        return json.dumps({"skill_name": "door_contact", "arguments": {"door": text}})

    question = "Tell me whether the back door is closed."
    # The model finds "closed" the likeliest phrase for the door: the question's name is taken.
    model = MockModel(
        ['{"final_answer": "No, the back door is open."}'],
        scores={
            ("front or back door", f" {question}"): -1.0,
            ANSWER_HEAD: 0.0,
            phrase("closed"): -0.5,
            phrase("back"): -3.0,
        },
    )
    state = Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(question)
    assert calls(state)[0] == ("door_contact", {"door": "back"})
    assert opened[0] == "back"
    # A question that names no door leaves the choice to the phrases' likelihood.
    assert phrases_to_try("Is a door closed?", [], argument="door") == fresh_phrases(
        question_phrases("Is a door closed?"), []
    )
    # Refused, the name is not offered again.
    assert "back" not in phrases_to_try(question, ["back"], argument="door")
