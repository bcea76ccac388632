"""A second skill for a question in two parts (daemon/guidance/followup.py), with a scripted model.

MockModel scripts ``likelihood`` by text: a key ``(marker, text)`` scores ``text`` after any
prompt holding ``marker`` (the longest text wins, then the first key listed). So a test says how
likely the question is after the first call's description joined with another's, and after the
first's joined with no skill's, without any real model.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.prompt import PLAIN
from edge_agentd.agent.question import question_parts
from edge_agentd.guidance.followup import content_free, joined, unasked_narrowings
from edge_agentd.guidance.guidance import ANSWER_HEAD, Candidate, Guidance, candidates_for

TWO_PART = "Which is warmer, the CPU or the BME280 sensor?"
ONE_PART = "What is the CPU temperature?"
ON = Guidance(follow_up_margin=3.0)
"""Off by default: the 270M answered no dev question better with a second result."""


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
        return {"sensor": name, "value": 41.5 if name == "bme280" else 9.5}

    @registry.skill
    def uptime() -> dict[str, Any]:
        """How long the device has been running."""
        return {"seconds": 458000}

    return registry


def by_name(registry: Registry) -> dict[str, Candidate]:
    found = [c for spec in registry for c in candidates_for(spec, PLAIN)]
    return {c.skill_name + (c.arguments or {}).get("name", ""): c for c in found}


def calls(state: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(e.skill_name, e.arguments) for e in state.stream.root if e.type == "CallSkillAction"]


def offered(model: MockModel) -> list[str]:
    """The answers the model chose among, last scored."""
    options = next(o for _, o in reversed(model.scored) if o[0].startswith(ANSWER_HEAD))
    return [json.loads(option)["final_answer"] for option in options]


def answer_prompt(model: MockModel) -> str:
    return next(p for p, o in reversed(model.scored) if o[0].startswith(ANSWER_HEAD))


def scores_for(question: str, joins: dict[str, float]) -> dict[Any, float]:
    """The first call is cpu_temperature (its description fits best); after it, the question
    scores ``joins[name]`` after cpu_temperature's description joined with ``name``'s, and 0.0
    after the join with no skill's."""
    found = by_name(house())
    cpu = found["cpu_temperature"].description
    text = f" {question}"
    scores: dict[Any, float] = {
        (joined(cpu, found[name].description, PLAIN), text): value for name, value in joins.items()
    }
    scores[(joined(cpu, content_free(PLAIN), PLAIN), text)] = 0.0
    scores[("The CPU temperature", text)] = -1.0  # the first call, well above no skill's -1000
    scores[ANSWER_HEAD] = 0.0
    return scores


def test_a_question_in_two_parts_gets_a_second_call_after_the_first_result() -> None:
    scores = scores_for(TWO_PART, {"read_sensorbme280": 6.0, "read_sensorprobe": 1.0})
    model = MockModel([], scores=scores | {f"{ANSWER_HEAD}The BME280 sensor is": 1.0})
    # "warmer" is no word of the evidence: the subject check is off, for the choice alone.
    guidance = dataclasses.replace(ON, know_subject=False)
    state = Agent(model, house(), guidance=guidance, grounding=Grounding()).run(
        TWO_PART, max_iterations=6
    )
    assert calls(state) == [("cpu_temperature", {}), ("read_sensor", {"name": "bme280"})]
    # Both calls were chosen by scoring, and the answer among sentences of both results.
    assert state.final_answer == "The BME280 sensor is 41.5."  # as the question spells it
    assert "The CPU temperature is 48.3 °C." in offered(model)
    assert model.prompts == []
    assert "Result of read_sensor" in answer_prompt(model)
    # The joins were scored once, after the first result: one per candidate left, and no skill's.
    found = by_name(house())
    cpu = found.pop("cpu_temperature").description
    scored = [p for p, _ in model.scored if p.startswith(cpu[:-1]) and p != cpu]
    others = [c.description for c in found.values()] + [content_free(PLAIN)]
    assert sorted(scored) == sorted(joined(cpu, other, PLAIN) for other in others)


def test_a_question_in_one_part_is_answered_after_its_one_call() -> None:
    # No join makes the question likelier than the first description joined with no skill's by
    # the margin: the first description explains all of it.
    margin = ON.follow_up_margin
    assert margin is not None
    model = MockModel(
        [], scores=scores_for(ONE_PART, {"read_sensorbme280": margin - 0.5, "uptime": -3.0})
    )
    state = Agent(model, house(), guidance=ON, grounding=Grounding()).run(
        ONE_PART, max_iterations=6
    )
    assert calls(state) == [("cpu_temperature", {})]
    assert state.final_answer == "The CPU temperature is 48.3 °C."


def test_the_second_call_is_off_by_default() -> None:
    model = MockModel([], scores=scores_for(TWO_PART, {"read_sensorbme280": 50.0}))
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run(
        TWO_PART, max_iterations=6
    )
    assert calls(state) == [("cpu_temperature", {})]


@settings(max_examples=40, deadline=None)
@given(
    joins=st.dictionaries(
        st.sampled_from(["read_sensorbme280", "read_sensorprobe", "uptime", "cpu_temperature"]),
        st.floats(-50, 50, allow_nan=False),
    ),
    question=st.text(min_size=1, max_size=40).filter(lambda q: q.strip()),
)
def test_no_call_repeats_and_at_most_one_follows_the_first(
    joins: dict[str, float], question: str
) -> None:
    # Whatever the scores, even ones that favour joining the first call with itself, and
    # whatever the question: no call is made twice, at most two are made, and the run answers.
    model = MockModel([], scores=scores_for(question, joins))
    state = Agent(model, house(), guidance=ON, grounding=Grounding()).run(
        question, max_iterations=6
    )
    made = calls(state)
    assert len(made) <= 2
    assert len({(name, str(arguments)) for name, arguments in made}) == len(made)
    assert state.outcome == "answered"
    assert state.stream.root[-1].made_by == "engine"


# -- A question in two parts joined by "and" ----------------------------------------------------

AND_QUESTION = "What are the CPU temperature and the humidity?"
FIRST_PART = " What are the CPU temperature"
SECOND_PART = " What are the humidity?"


def parts_scores(second_fits: str) -> dict[Any, float]:
    """Each part scored alone: the first fits the CPU's description, the second ``second_fits``
    (a text of one candidate's description) by far."""
    return {
        ("The CPU temperature", FIRST_PART): -1.0,
        ("The CPU temperature", SECOND_PART): -30.0,
        (second_fits, SECOND_PART): -2.0,
        ANSWER_HEAD: 0.0,
    }


def test_a_question_joined_by_and_is_split_into_two_questions() -> None:
    assert question_parts(AND_QUESTION) == [FIRST_PART.strip(), SECOND_PART.strip()]
    assert question_parts("What is the load average, and what time is it?") == [
        "What is the load average",
        "What time is it?",
    ]
    # A part without a question of its own keeps its words when the first has no head noun.
    assert question_parts("How warm is it and how damp?") == ["How warm is it", "How damp?"]
    assert question_parts("What is the humidity?") == []
    assert question_parts("What are the CPU and GPU?") == []  # a part of one word
    assert question_parts("a b and c d and e f") == []  # three parts
    # "between" pairs with the "and": one thing is asked of two.
    assert question_parts("What is the difference between the CPU and the probe?") == []
    # Unless a question opens after the "and".
    assert question_parts("What is the time between reboots and what is the load?") == [
        "What is the time between reboots",
        "What is the load?",
    ]


def test_each_part_chooses_its_call_and_the_answer_states_their_values_in_order() -> None:
    scores = parts_scores("humidity in %RH") | {" and the bme280 sensor is": 1.0}
    model = MockModel([], scores=scores)
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run(
        AND_QUESTION, max_iterations=6
    )
    assert calls(state) == [("cpu_temperature", {}), ("read_sensor", {"name": "bme280"})]
    # The first part's sentence, chosen among the first result's, then the second's, chosen
    # after it among the second result's: each result answers its own part.
    assert state.final_answer == "The CPU temperature is 48.3 °C and the bme280 sensor is 41.5."
    # The first part had one sentence, so the model chose only the second's.
    (second,) = [o for p, o in model.scored if o[0].startswith((ANSWER_HEAD, " and"))]
    assert all(option.startswith(" and the ") and "48.3" not in option for option in second)
    # Whether it cannot tell was judged by the question's subject, which the results know.
    assert not any("cannot tell" in option for option in second)


def test_a_second_part_the_first_call_explains_gets_no_second_call() -> None:
    # The second part fits the CPU's description best too: one call, one value to state.
    scores = parts_scores("humidity in %RH")
    scores[("The CPU temperature", SECOND_PART)] = -1.0
    model = MockModel([], scores=scores)
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run(
        AND_QUESTION, max_iterations=6
    )
    assert calls(state) == [("cpu_temperature", {})]
    assert state.final_answer == "The CPU temperature is 48.3 °C."
    # Off, the question is asked whole, as before.
    model = MockModel([], scores=parts_scores("humidity in %RH"))
    off = Guidance(part_margin=None)
    state = Agent(model, house(), guidance=off, grounding=Grounding()).run(
        AND_QUESTION, max_iterations=6
    )
    assert len(calls(state)) == 1


def failing_house() -> Registry:
    registry = house()

    @registry.skill
    def rain_gauge() -> dict[str, Any]:
        """Rain in the last hour."""
        raise RuntimeError("the gauge is unplugged")

    return registry


def test_a_failed_second_call_is_answered_from_the_first_result_alone() -> None:
    model = MockModel([], scores=parts_scores("Rain in the last"))
    state = Agent(model, failing_house(), guidance=Guidance(), grounding=Grounding()).run(
        AND_QUESTION, max_iterations=6
    )
    # No third call after the failed one: the result stands, and one value of it is stated.
    assert calls(state) == [("cpu_temperature", {}), ("rain_gauge", {})]
    assert state.outcome == "answered"
    assert state.final_answer == "The CPU temperature is 48.3 °C."


def test_a_question_of_long_runs_of_spaces_is_split_in_linear_time() -> None:
    # The first pattern backtracked in cubic time here: 80 s for a question of 4000 characters.
    assert question_parts("What is" + " " * 3990 + "it?") == []
    assert question_parts("What  is   the load ,  and  what   time is it?") == [
        "What is the load",
        "What time is it?",
    ]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_the_parts_of_any_text_are_none_or_two_questions_of_two_words_or_more(text: str) -> None:
    parts = question_parts(text)
    assert parts == [] or (len(parts) == 2 and all(len(p.split()) >= 2 for p in parts))


def shelf() -> Registry:
    registry = Registry()

    @registry.skill(
        calls=lambda: [({}, "every jar"), ({"kind": "jam"}, "the jam jars"), ({"kind": "tea"}, "")]
    )
    def list_jars(kind: str | None = None) -> dict[str, Any]:
        """The jars on the shelf."""
        return {"count": 3 if kind is None else 1, "kind": kind}

    return registry


def test_a_narrower_call_is_made_only_when_the_question_names_what_narrows_it() -> None:
    found = [c for spec in shelf() for c in candidates_for(spec, PLAIN)]
    keys = {json.dumps(c.arguments): c.key for c in found}
    assert unasked_narrowings("Which jars are there?", found) == {
        keys['{"kind": "jam"}'],
        keys['{"kind": "tea"}'],
    }
    # A word of its own, in any case, or its plural; never a part of a word.
    assert unasked_narrowings("How many Jams are there?", found) == {keys['{"kind": "tea"}']}
    assert unasked_narrowings("Any teapots or jam?", found) == {keys['{"kind": "tea"}']}
    assert unasked_narrowings("Jam-jars and TEA, please", found) == set()
    # In a run: the jam list fits best, but the question asks for no kind.
    for question, wanted in (
        ("Which jars are there?", {}),
        ("How many jam jars?", {"kind": "jam"}),
    ):
        model = MockModel(
            ['{"final_answer": "There are 3."}'],
            scores={("the jam jars", f" {question}"): -1.0, ("every jar", f" {question}"): -2.0},
        )
        state = Agent(model, shelf(), guidance=Guidance(), grounding=Grounding()).run(
            question, max_iterations=3
        )
        assert calls(state) == [("list_jars", wanted)]


def test_a_second_part_that_names_a_call_gets_it_however_close_the_scores() -> None:
    question = "What is the wind and what is the humidity?"
    scores = {
        ("the wind in km/h", " What is the wind"): -1.0,
        ("the wind in km/h", " What is the humidity?"): -2.0,
        ("the humidity in %RH", " What is the humidity?"): -1.9,  # within the margin
        ANSWER_HEAD: 0.0,
    }
    model = MockModel(
        ['{"final_answer": "The wind is 12 km/h and the humidity is 41.5."}'], scores=scores
    )
    state = Agent(model, station(), guidance=Guidance(), grounding=Grounding()).run(
        question, max_iterations=6
    )
    assert calls(state) == [
        ("read_sensor", {"quantity": "wind"}),
        ("read_sensor", {"quantity": "humidity"}),
    ]
    # A part naming the first call itself gets no second call.
    model = MockModel(['{"final_answer": "The wind is 12 km/h."}'], scores=scores)
    again = "What is the wind and what is the wind?"
    state = Agent(model, station(), guidance=Guidance(), grounding=Grounding()).run(
        again, max_iterations=6
    )
    assert calls(state) == [("read_sensor", {"quantity": "wind"})]


def station() -> Registry:
    registry = Registry()

    @registry.skill(
        calls=lambda: [
            ({"quantity": "wind"}, "the wind in km/h"),
            ({"quantity": "humidity"}, "the humidity in %RH"),
        ]
    )
    def read_sensor(quantity: str) -> dict[str, Any]:
        """Current value of one quantity."""
        return {
            "value": 12 if quantity == "wind" else 41.5,
            "unit": "km/h" if quantity == "wind" else "%",
        }

    return registry
