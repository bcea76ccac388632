"""docs/design.md, "Grounding": the rules every answer passes, for every model and strategy.

Each rule with a scripted model (whose decoding is not ours: the loop's validator holds it), the
same rules as the action schema's answer pattern (where the decoding is ours), the events' ids
and makers, and a property: under plain and guided, no answer states a number absent from its
evidence, and every run ends with one outcome.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_agentd import (
    Agent,
    AgentState,
    CallSkillAction,
    FinalAnswerAction,
    Grounding,
    MockModel,
    Registry,
    SkillResultObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from edge_agentd.agent.claims import absent_value
from edge_agentd.agent.evidence import numbers_in
from edge_agentd.agent.grounding import answer_rule, check_answer
from edge_agentd.agent.observed import gather
from edge_agentd.agent.question import Question
from edge_agentd.guidance.guidance import Guidance


def answer(text: str) -> str:
    return json.dumps({"final_answer": text})


def call(skill: str, **arguments: Any) -> str:
    return json.dumps({"skill_name": skill, "arguments": arguments})


def home(registry: Registry | None = None) -> Registry:
    """A plugin home as docs/skills.md writes plugins: a door contact, a humidity sensor, a
    clock, and a CPU sensor that is broken."""
    registry = registry or Registry()

    @registry.skill()
    def front_door() -> dict[str, Any]:
        """Whether the front door is open or closed."""
        return {"door": "front", "state": "closed"}

    @registry.skill()
    def humidity() -> dict[str, Any]:
        """The relative humidity in the living room."""
        return {"value": 41.5, "unit": "%RH"}

    @registry.skill()
    def today() -> dict[str, Any]:
        """Today's date."""
        return {"date": "2026-12-05", "weekday": "Saturday"}

    @registry.skill()
    def cpu_temperature() -> dict[str, Any]:
        """The CPU temperature."""
        raise OSError("no thermal zone")

    @registry.skill()
    def window() -> dict[str, Any]:
        """Whether the bedroom window is open."""
        return {"window": "bedroom", "open": False}

    return registry


def run(query: str, replies: list[str], **kwargs: Any) -> tuple[AgentState, MockModel]:
    # It stands for a model that decodes under the grounded schema: each call records it.
    model = MockModel(replies, uses_action_schema=True)
    return Agent(model, home(), grounding=Grounding()).run(query, **kwargs), model


def refusals(state: AgentState) -> list[tuple[str | None, str]]:
    return [
        (e.error_type, e.feedback)
        for e in state.stream
        if isinstance(e, ValidationErrorObservation) and e.validator_name == "grounding"
    ]


# -- 1. no answer without evidence -----------------------------------------------------------------


def test_an_answer_before_any_result_is_refused_and_the_model_is_told_to_call_a_skill() -> None:
    state, model = run(
        "What is the humidity?",
        [answer("The humidity is pleasant."), call("humidity"), answer("It is 41.5 %RH.")],
    )
    [(kind, feedback)] = refusals(state)
    assert kind == "no_evidence"
    assert "Call a skill" in feedback and "I cannot tell" in feedback
    assert feedback in model.prompts[1]
    assert state.outcome == "answered" and state.final_answer == "It is 41.5 %RH."


def test_before_any_result_saying_it_cannot_tell_is_an_answer() -> None:
    state, _ = run("Is it going to snow?", [answer("I cannot tell: no skill reads the weather.")])
    assert state.outcome == "answered" and refusals(state) == []


def test_a_failed_call_is_no_evidence() -> None:
    state, _ = run(
        "How hot is the CPU?",
        [call("cpu_temperature"), answer("The CPU is fine."), answer("I cannot tell.")],
    )
    assert isinstance(state.stream[1], ToolErrorObservation)
    assert [kind for kind, _ in refusals(state)] == ["no_evidence"]
    assert state.final_answer == "I cannot tell."


def test_a_question_about_the_skills_is_answered_from_the_catalogue() -> None:
    state, _ = run("What skills do you have?", [answer("I can call front_door and humidity.")])
    assert state.outcome == "answered" and refusals(state) == []
    state, _ = run("What skills do you have?", [answer("I can do many things."), answer("today")])
    assert [kind for kind, _ in refusals(state)] == ["no_evidence"]


def test_a_model_that_only_guesses_runs_out_of_retries_and_the_run_ends() -> None:
    state, _ = run("What is the humidity?", [answer("The humidity is 50%.")] * 10, max_retries=2)
    assert state.outcome == "retries_exhausted"
    assert len(refusals(state)) == 3
    assert state.final_answer is None


# -- 2. every value is the evidence's ----------------------------------------------------------


def test_a_number_no_result_holds_is_refused_by_name() -> None:
    state, _ = run(
        "What is the humidity?",
        [call("humidity"), answer("The humidity is 50 %RH."), answer("The humidity is 41.5 %RH.")],
    )
    [(kind, feedback)] = refusals(state)
    assert kind == "value_not_in_evidence" and "'50'" in feedback
    assert state.final_answer == "The humidity is 41.5 %RH."


def test_a_date_and_a_unit_are_values_too() -> None:
    state, _ = run(
        "What is today's date?",
        [call("today"), answer("It is 2023-04-15."), answer("Today is 2026-12-05, a Saturday.")],
    )
    assert [kind for kind, _ in refusals(state)] == ["value_not_in_evidence"]
    assert state.final_answer == "Today is 2026-12-05, a Saturday."
    state, _ = run(
        "What is the humidity?",
        [call("humidity"), answer("It is 41.5 °C."), answer("It is 41.5%.")],
    )
    [(kind, feedback)] = refusals(state)
    assert kind == "value_not_in_evidence" and "41.5 °C" in feedback
    assert state.final_answer == "It is 41.5%."


def test_a_unit_the_results_give_another_value_is_refused_beside_this_one() -> None:
    registry = Registry()

    @registry.skill()
    def cpu_temperature() -> dict[str, Any]:
        """The CPU temperature."""
        return {
            "value": 48.312,
            "unit": "°C",
            "also": {"value": 118.96, "unit": "°F", "unit_name": "Fahrenheit"},
        }

    said = "The CPU is at 48.312 °C, which is 48.312 °C (Fahrenheit)."
    model = MockModel(
        [call("cpu_temperature"), answer(said), answer("It is 118.96 °F, in Fahrenheit.")]
    )
    state = Agent(model, registry, grounding=Grounding()).run("How hot is the CPU?")
    [(kind, feedback)] = refusals(state)
    assert kind == "value_not_in_evidence" and "Fahrenheit" in feedback
    assert state.final_answer == "It is 118.96 °F, in Fahrenheit."


def test_a_bare_number_may_take_the_unit_its_skill_names_in_words() -> None:
    registry = Registry()

    @registry.skill()
    def cpu_temperature() -> float:
        """The CPU temperature in degrees Celsius."""
        return 48.3

    model = MockModel([call("cpu_temperature"), answer("The CPU is at 48.3 °C.")])
    state = Agent(model, registry, grounding=Grounding()).run("How hot is the CPU?")
    assert state.outcome == "answered" and refusals(state) == []


def test_a_number_of_the_question_may_be_repeated() -> None:
    state, _ = run(
        "Is the humidity above 60 %RH?",
        [call("humidity"), answer("No: it is 41.5 %RH, below 60 %RH.")],
    )
    assert state.outcome == "answered" and refusals(state) == []


def test_saying_it_cannot_tell_states_no_invented_value_either() -> None:
    state, _ = run(
        "What is the humidity?",
        [answer("I cannot tell, maybe 50 %."), answer("I cannot tell.")],
    )
    assert [kind for kind, _ in refusals(state)] == ["value_not_in_evidence"]


# -- 3. the subject is the evidence's -----------------------------------------------------------


def test_a_thing_no_call_or_result_names_gets_i_cannot_tell() -> None:
    state, _ = run(
        "Is the garage door open?",
        [call("front_door"), answer("No, the garage door is closed."), answer("I cannot tell.")],
    )
    [(kind, feedback)] = refusals(state)
    assert kind == "unknown_subject" and "garage door" in feedback
    assert state.final_answer == "I cannot tell."


def test_the_subject_of_a_skill_that_failed_is_not_vouched_for_by_another() -> None:
    state, _ = run(
        "How hot is the CPU?",
        [
            call("cpu_temperature"),
            call("today"),
            answer("The CPU is hot, as of 2026-12-05."),
            answer("I cannot tell: the CPU sensor failed."),
        ],
    )
    assert [kind for kind, _ in refusals(state)] == ["unknown_subject"]


def test_a_subject_the_called_skill_names_is_answered() -> None:
    state, _ = run("What is the relative humidity?", [call("humidity"), answer("It is 41.5 %RH.")])
    assert state.outcome == "answered" and refusals(state) == []


def test_a_question_in_two_parts_is_held_back_only_when_both_parts_are_unnamed() -> None:
    question = "What is the garage temperature and what is the humidity?"
    state, _ = run(question, [call("humidity"), answer("The humidity is 41.5 %RH.")])
    assert state.outcome == "answered" and refusals(state) == []
    question = "What is the garage temperature and what is the cellar light?"
    state, _ = run(
        question, [call("humidity"), answer("It is 41.5 %RH."), answer("I cannot tell.")]
    )
    assert [kind for kind, _ in refusals(state)] == ["unknown_subject"]


def test_a_comparison_names_its_things_after_it() -> None:
    # Its head is no thing ("warmer"); the things after it are, and each must be named.
    question = "Which is warmer, the humidity or the living room?"
    state, _ = run(question, [call("humidity"), answer("The humidity: 41.5 %RH.")])
    assert state.outcome == "answered" and refusals(state) == []
    # The front door is no result's: whatever the answer says of it rests on nothing.
    question = "Which is warmer, the humidity or the front door?"
    state, _ = run(
        question,
        [call("humidity"), answer("The humidity: 41.5 %RH."), answer("I cannot tell.")],
    )
    assert [kind for kind, _ in refusals(state)] == ["unknown_subject"]
    assert state.final_answer == "I cannot tell."


def test_a_thing_a_single_of_word_names_must_be_the_evidence_s() -> None:
    # Today's date is no date of Wednesday's: "The date is 2026-12-05." would read as its.
    question = "What is the date of next Wednesday?"
    state, _ = run(
        question, [call("today"), answer("The date is 2026-12-05."), answer("I cannot tell.")]
    )
    [(kind, feedback)] = refusals(state)
    assert kind == "unknown_subject" and "Wednesday" in feedback
    assert state.final_answer == "I cannot tell."
    state, _ = run("What is the date of Saturday?", [call("today"), answer("It is 2026-12-05.")])
    assert state.outcome == "answered" and refusals(state) == []


def test_a_place_the_results_do_not_name_is_a_subject_they_do_not_know() -> None:
    # The humidity skill reads the living room: the bedroom's humidity is not its value.
    question = "What is the humidity in the bedroom?"
    state, _ = run(
        question, [call("humidity"), answer("It is 41.5 %RH."), answer("I cannot tell.")]
    )
    [(kind, feedback)] = refusals(state)
    assert kind == "unknown_subject" and "bedroom" in feedback
    assert state.final_answer == "I cannot tell."
    state, _ = run(
        "What is the humidity in the living room?", [call("humidity"), answer("It is 41.5 %RH.")]
    )
    assert state.outcome == "answered" and refusals(state) == []


def test_a_guided_answer_about_another_place_is_i_cannot_tell() -> None:
    # Every sentence the engine renders from the living room's result is about the living
    # room; grounding takes none of them for the bedroom, and "I cannot tell" is what is left.
    model = MockModel([], scores={("The skill humidity", ""): 0.0})
    state = Agent(model, home(), guidance=Guidance(), grounding=Grounding()).run(
        "What is the humidity in the bedroom?"
    )
    assert state.outcome == "answered"
    assert state.final_answer is not None and state.final_answer.startswith("I cannot tell")
    assert "41.5" not in state.final_answer


# -- 4. a state is a claim ----------------------------------------------------------------------


def test_a_state_the_result_does_not_hold_is_refused() -> None:
    state, _ = run(
        "Is the front door open?",
        [
            call("front_door"),
            answer("Yes, the front door is open."),
            answer("No, the front door is closed."),
        ],
    )
    [(kind, feedback)] = refusals(state)
    assert kind == "state_not_in_evidence" and "open" in feedback
    assert state.final_answer == "No, the front door is closed."


def test_a_flag_says_the_state_too() -> None:
    state, _ = run(
        "Is the bedroom window open?",
        [call("window"), answer("Yes."), answer("No, it is not open.")],
    )
    assert [kind for kind, _ in refusals(state)] == ["state_not_in_evidence"]
    assert state.final_answer == "No, it is not open."


def test_a_yes_or_no_question_is_answered_yes_no_or_cannot_tell() -> None:
    # True, but it leaves the asker to work out the yes or no.
    state, _ = run(
        "Is the bedroom window open?",
        [call("window"), answer("It is not open."), answer("No, it is not open.")],
    )
    assert [kind for kind, _ in refusals(state)] == ["not_yes_or_no"]
    assert state.final_answer == "No, it is not open."
    state, _ = run("Is the bedroom window open?", [call("window"), answer("I cannot tell.")])
    assert refusals(state) == [] and state.final_answer == "I cannot tell."


def test_denying_a_state_the_result_holds_is_refused() -> None:
    state, _ = run(
        "Is the front door closed?",
        [call("front_door"), answer("No, it is not closed."), answer("Yes, it is closed.")],
    )
    assert [kind for kind, _ in refusals(state)] == ["state_not_in_evidence"]
    assert state.final_answer == "Yes, it is closed."


# -- where the decoding is ours: the same rules in the action schema ------------------------------


def _answer_pattern(schema: dict[str, Any]) -> str:
    branches = schema.get("oneOf", [schema])
    [final] = [b for b in branches if "final_answer" in b["properties"]]
    pattern = final["properties"]["final_answer"]["pattern"]
    assert isinstance(pattern, str)
    return pattern


def test_the_schema_asks_for_a_call_first_then_i_cannot_tell_until_a_result() -> None:
    replies = [call("cpu_temperature"), call("humidity"), answer("It is 41.5 %RH.")]
    state, model = run("What is the humidity?", replies)
    assert state.outcome == "answered"
    first, after_failure, after_result = (c["action_schema"] for c in model.calls)
    # First a call: a driving model otherwise answers at once (held to "I cannot tell").
    assert all("skill_name" in b["properties"] for b in first["oneOf"])
    # After a call that failed, while a skill not called yet names the humidity, calls only:
    # "I cannot tell" waits for it (tests below); no other answer is open either.
    assert all("skill_name" in b["properties"] for b in after_failure["oneOf"])
    after = _answer_pattern(after_result)
    assert re.fullmatch(after, "The humidity is 41.5 %RH.")
    assert not re.fullmatch(after, "The humidity is 50 %RH.")


def test_a_question_about_the_skills_may_be_answered_at_once_in_the_schema_too() -> None:
    _, model = run("What skills do you have?", [answer("I can call front_door and today.")])
    pattern = _answer_pattern(model.calls[0]["action_schema"])
    assert re.fullmatch(pattern, "I can call front_door and today.")
    assert not re.fullmatch(pattern, "I can do many things.")


def test_the_schema_holds_an_unnamed_subject_to_i_cannot_tell() -> None:
    state, model = run("Is the garage door open?", [call("front_door"), answer("I cannot tell.")])
    assert state.outcome == "answered"
    after = _answer_pattern(model.calls[1]["action_schema"])
    assert re.fullmatch(after, "I cannot tell: no skill reads the garage door.")
    assert not re.fullmatch(after, "The garage door is closed.")


def test_the_system_prompt_states_the_rules_and_stays_the_same() -> None:
    _, first = run("What is the humidity?", [answer("I cannot tell.")])
    _, second = run("Is the front door open?", [answer("I cannot tell.")])
    assert 'only answer you may give begins "I cannot tell"' in first.prompts[0]
    system = first.prompts[0].split("User: ")[0]
    assert second.prompts[0].startswith(system)


# -- events: who made each action, and which call each observation answers ----------------------


def test_each_call_has_an_id_its_observation_carries_back() -> None:
    state, _ = run(
        "What is the humidity?",
        [
            call("cpu_temperature"),
            call("humidity", extra=1),
            call("humidity"),
            answer("It is 41.5 %RH."),
        ],
    )
    calls = [e for e in state.stream if isinstance(e, CallSkillAction)]
    assert [c.call_id for c in calls] == ["call_1", "call_2", "call_3"]
    error, invalid, result = state.stream[1], state.stream[3], state.stream[5]
    assert isinstance(error, ToolErrorObservation) and error.call_id == "call_1"
    assert isinstance(invalid, ValidationErrorObservation) and invalid.call_id == "call_2"
    assert isinstance(result, SkillResultObservation) and result.call_id == "call_3"
    assert all(
        e.made_by == "model"
        for e in state.stream
        if isinstance(e, CallSkillAction | FinalAnswerAction)
    )


def test_a_guided_call_chosen_by_likelihood_is_the_engines_and_so_is_its_answer() -> None:
    # The humidity skill's description makes every question likely; no other is scored. Since
    # the render branch, a guided answer is a sentence the engine renders, on the model's choice.
    model = MockModel([], scores={("The skill humidity", ""): 0.0})
    state = Agent(model, home(), guidance=Guidance(), grounding=Grounding()).run(
        "What is the humidity?"
    )
    made = [
        (e.type, e.made_by)
        for e in state.stream
        if isinstance(e, CallSkillAction | FinalAnswerAction)
    ]
    assert made == [("CallSkillAction", "engine"), ("FinalAnswerAction", "engine")]
    assert state.final_answer is not None and "41.5 %RH" in state.final_answer


def test_old_events_without_the_new_fields_still_read() -> None:
    state = AgentState.model_validate(
        {
            "query": "q",
            "stream": [
                {"type": "CallSkillAction", "skill_name": "humidity"},
                {"type": "SkillResultObservation", "skill_name": "humidity", "result": 1},
                {"type": "FinalAnswerAction", "answer": "1"},
            ],
        }
    )
    first = state.stream[0]
    assert isinstance(first, CallSkillAction) and first.call_id is None and first.made_by == "model"


# -- the property: no answer states a number absent from its evidence ----------------------------

_numbers = st.one_of(
    st.integers(-1000, 3000).map(str),
    st.floats(-100, 100, allow_nan=False).map(lambda x: f"{x:.2f}"),
    st.sampled_from(["2026-12-05", "41.5 %RH", "12:30", "BME280", "1,024", "-3"]),
)
_text = st.lists(
    st.one_of(
        st.sampled_from(["The", "humidity", "is", "I cannot tell", "%", "°C", "."]), _numbers
    ),
    max_size=8,
).map(" ".join)
_reply = st.one_of(
    _text.map(answer),
    st.sampled_from(["humidity", "reading", "today", "cpu_temperature"]).map(call),
    st.text(max_size=20),
)


def numbers_registry(values: list[str]) -> Registry:
    registry = Registry()

    @registry.skill()
    def reading() -> dict[str, Any]:
        """A reading of the device, with values and units."""
        return {"readings": [{"value": float(v), "unit": "°C"} for v in values], "note": "ok"}

    return home(registry)


def evidence_numbers(state: AgentState) -> set[float]:
    results = [
        json.dumps(e.result, ensure_ascii=False)
        for e in state.stream
        if isinstance(e, SkillResultObservation)
    ]
    # The texts a result turn shows, and the question.
    return numbers_in([state.query, *results]) | numbers_in(
        [t for e in state.stream if isinstance(e, SkillResultObservation) for t in _texts(e.result)]
    )


def _texts(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = []
        if isinstance(node.get("value"), int | float) and isinstance(node.get("unit"), str):
            found.append(f"{json.dumps(node['value'])} {node['unit']}")
        for key, value in node.items():
            found += [str(key), *_texts(value)]
        return found
    if isinstance(node, list):
        return [str(len(node)), *(t for item in node for t in _texts(item))]
    return [node if isinstance(node, str) else json.dumps(node)]


def _replies(values: list[str]) -> st.SearchStrategy[list[str]]:
    """Replies of any text, among them answers that copy the reading's values, or change them."""
    copied = st.sampled_from(values) if values else st.nothing()
    numbers = st.one_of(
        copied, copied.map(lambda v: f"{v} °C"), copied.map(lambda v: v + "1"), _numbers
    )
    words = st.sampled_from(["The", "reading", "is", "I cannot tell", "%", "°C", "."])
    text = st.lists(st.one_of(words, numbers), min_size=1, max_size=6).map(" ".join)
    first = st.sampled_from([[call("reading")], []])
    rest = st.lists(st.one_of(text.map(answer), _reply), min_size=1, max_size=8)
    return st.tuples(first, rest).map(lambda pair: pair[0] + pair[1])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    values=st.lists(st.integers(-50, 50).map(lambda n: f"{n / 2}"), max_size=3),
    question=_text,
    guided=st.booleans(),
)
def test_no_answer_states_a_number_absent_from_its_evidence(
    data: st.DataObject, values: list[str], question: str, guided: bool
) -> None:
    replies = data.draw(_replies(values))
    model = MockModel(replies, scores={("The skill reading", ""): 0.0})
    agent = Agent(
        model,
        numbers_registry(values),
        guidance=Guidance() if guided else None,
        grounding=Grounding(),
    )
    state = agent.run(question or "q", max_iterations=6, max_retries=2)
    assert state.outcome is not None  # one outcome, always: the budget ends a run that guesses
    if state.final_answer is not None:
        assert numbers_in([state.final_answer]) <= evidence_numbers(state)


# -- what the schema admits, the validator accepts -------------------------------------------------


def _evidence_after(query: str, *skills: str) -> Any:
    replies = [call(name) for name in skills] + [answer("I cannot tell.")]
    state, _ = run(query, replies)
    return gather(state, home(), [s.name for s in home().select(None)])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_answer_the_schema_admits_keeps_the_value_rule(data: st.DataObject) -> None:
    evidence = _evidence_after(
        "What is the humidity and what is today's date?", "humidity", "today"
    )
    text = data.draw(st.from_regex(answer_rule(evidence), fullmatch=True))
    assert absent_value(text, evidence.texts) is None, text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_before_any_result_the_schema_admits_only_answers_the_validator_accepts(
    data: st.DataObject,
) -> None:
    for query in ("What is the humidity?", "What skills do you have?"):
        evidence = _evidence_after(query)
        text = data.draw(st.from_regex(answer_rule(evidence), fullmatch=True))
        assert check_answer(text, evidence) is None, (query, text)


def test_a_huge_hostile_answer_is_judged_quickly_and_refused() -> None:
    # Many units, values and words: each rule reads the answer in linear time, never a hang.
    hostile = "It is 41.5 %RH " + "9 °C Fahrenheit 2023-01-01 open " * 20000
    state, _ = run(
        "What is the humidity?", [call("humidity"), answer(hostile), answer("I cannot tell.")]
    )
    assert [kind for kind, _ in refusals(state)] == ["value_not_in_evidence"]
    assert state.final_answer == "I cannot tell."
    # All of it true: every rule reads it to the end, and the run is answered.
    long = "It is " + "41.5 %RH, " * 20000 + "humid."
    state, _ = run("What is the humidity?", [call("humidity"), answer(long)])
    assert state.outcome == "answered" and refusals(state) == []


def test_a_run_parses_its_question_once(monkeypatch: Any) -> None:
    # Grounding and the guidance read the run's one parse (AgentState.question), at every step.
    parsed: list[str] = []
    parse = Question.parse.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Question], text: str) -> Question:
        parsed.append(text)
        result: Question = parse(cls, text)
        return result

    monkeypatch.setattr(Question, "parse", classmethod(counted))
    model = MockModel([], scores={("The skill humidity", ""): 0.0})
    state = Agent(model, home(), guidance=Guidance(), grounding=Grounding()).run(
        "What is the humidity?"
    )
    assert state.outcome == "answered"
    state, _ = run(
        "What is the humidity?",
        [answer("Humid."), call("humidity"), answer("It is 12 %RH."), answer("It is 41.5 %RH.")],
    )
    assert state.outcome == "answered" and len(refusals(state)) == 2
    assert parsed == ["What is the humidity?", "What is the humidity?"]  # one per run


def test_i_cannot_tell_waits_while_a_call_not_made_could_answer() -> None:
    # A driving model called the wrong skill for the humidity (Qwen2.5-Coder called
    # system_status, then declined with ten steps left): while a skill it has not called
    # names the humidity, the schema offers calls only; at the last step it may decline.
    registry = Registry()

    @registry.skill
    def system_status() -> dict[str, float]:
        """Load and memory of this device."""
        return {"load": 0.4}

    @registry.skill
    def humidity() -> dict[str, Any]:
        """The relative humidity of the room."""
        return {"humidity": 41.5, "unit": "%RH"}

    for steps in (3, 2):
        model = MockModel(
            [call("system_status"), answer("I cannot tell.")], uses_action_schema=True
        )
        agent = Agent(model, registry, grounding=Grounding())
        agent.run("What is the humidity?", max_iterations=steps)
        after_the_wrong_call = model.calls[1]["action_schema"]["oneOf"]
        answers = [b for b in after_the_wrong_call if "final_answer" in b["properties"]]
        # With a step to spare, calls only; at the last step, "I cannot tell" is open.
        assert (answers == []) is (steps == 3)


def test_i_cannot_tell_is_open_when_no_call_left_names_the_subject() -> None:
    registry = Registry()

    @registry.skill
    def system_status() -> dict[str, float]:
        """Load and memory of this device."""
        return {"load": 0.4}

    model = MockModel([call("system_status"), answer("I cannot tell.")], uses_action_schema=True)
    state = Agent(model, registry, grounding=Grounding()).run("What is the humidity?")
    assert any("final_answer" in b["properties"] for b in model.calls[1]["action_schema"]["oneOf"])
    assert state.final_answer == "I cannot tell."


def test_an_answer_that_cannot_tell_may_say_why_in_the_failed_skills_words() -> None:
    registry = Registry()

    @registry.skill
    def cpu_temperature() -> float:
        """The CPU temperature in degrees Celsius."""
        raise OSError("no thermal zone was found under /srv/sys2/class/thermal")

    reason = "I cannot tell: no thermal zone was found under /srv/sys2/class/thermal."
    model = MockModel([call("cpu_temperature"), answer(reason)])
    state = Agent(model, registry, grounding=Grounding()).run("How hot is the CPU?")
    assert state.final_answer == reason
    # The same words are no evidence for a value: only a decline may quote them.
    model = MockModel(
        [call("cpu_temperature"), answer("The zone is sys2."), answer("I cannot tell.")]
    )
    state = Agent(model, registry, grounding=Grounding()).run("How hot is the CPU?")
    assert [e.error_type for e in state.stream if e.type == "ValidationErrorObservation"] == [
        "value_not_in_evidence"
    ]


def test_a_comparison_with_a_number_is_not_held_to_yes_or_no() -> None:
    # No rule reads which way "below 1" goes: made to open with yes or no, a model said "No,
    # ... 0.31, which is below 1."; the value's plain sentence stands.
    question = "Is the humidity below 50?"
    state, _ = run(question, [call("humidity"), answer("It is 41.5 %RH.")])
    assert state.outcome == "answered" and refusals(state) == []
