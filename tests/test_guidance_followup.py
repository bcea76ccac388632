"""A second skill for a question in two parts (daemon/agent/followup.py), with a scripted model.

MockModel scripts ``likelihood`` by text: a key ``(marker, text)`` scores ``text`` after any
prompt holding ``marker`` (the longest text wins, then the first key listed). So a test says how
likely the question is after the first call's description joined with another's, and after the
first's joined with no skill's, without any real model.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agent import Agent, MockModel, Registry
from edge_agent.agent.followup import content_free, joined
from edge_agent.agent.guidance import ANSWER_HEAD, Candidate, Guidance, candidates_for
from edge_agent.agent.prompt import PLAIN

TWO_PART = "What are the CPU temperature and the humidity?"
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
    model = MockModel(
        ['{"final_answer": "The CPU is at 48.3 °C and the humidity is 41.5 %RH."}'],
        scores=scores_for(TWO_PART, {"read_sensorbme280": 6.0, "read_sensorprobe": 1.0}),
    )
    state = Agent(model, house(), guidance=ON).run(TWO_PART, max_iterations=6)
    assert calls(state) == [("cpu_temperature", {}), ("read_sensor", {"name": "bme280"})]
    assert state.final_answer == "The CPU is at 48.3 °C and the humidity is 41.5 %RH."
    # Both calls were chosen by scoring; the one generation is the answer, after both results.
    assert len(model.prompts) == 1
    assert model.calls[0]["prefix"] == ANSWER_HEAD
    assert "Result of read_sensor" in model.prompts[0]
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
        ['{"final_answer": "The CPU is at 48.3 °C."}'],
        scores=scores_for(ONE_PART, {"read_sensorbme280": margin - 0.5, "uptime": -3.0}),
    )
    state = Agent(model, house(), guidance=ON).run(ONE_PART, max_iterations=6)
    assert calls(state) == [("cpu_temperature", {})]
    assert state.final_answer == "The CPU is at 48.3 °C."


def test_the_second_call_is_off_by_default() -> None:
    model = MockModel(
        ['{"final_answer": "48.3 °C."}'],
        scores=scores_for(TWO_PART, {"read_sensorbme280": 50.0}),
    )
    state = Agent(model, house(), guidance=Guidance()).run(TWO_PART, max_iterations=6)
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
    model = MockModel(['{"final_answer": "Done."}'], scores=scores_for(question, joins))
    state = Agent(model, house(), guidance=ON).run(question, max_iterations=6)
    made = calls(state)
    assert len(made) <= 2
    assert len({(name, str(arguments)) for name, arguments in made}) == len(made)
    assert state.outcome == "answered"
    assert state.final_answer == "Done."
