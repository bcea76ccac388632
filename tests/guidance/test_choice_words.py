"""A thing a result names only by its id is called what the skills' listed calls call it: a
compare's reading of ``t-01`` is "the pond thermometer's", and "Is the pond warmer than the
aquarium?" is answered yes or no by the one the result says is higher
(daemon/guidance/choicewords.py, compared.py's ``whether_compared``).

Every skill here is made up, as a plugin's author writes it; every sentence offered is put to
grounding, which must take it.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.question import Question
from edge_agentd.guidance.choicewords import choice_words
from edge_agentd.guidance.render import fitting_sentences

THINGS = {"t-01": "the pond", "t-02": "the aquarium"}


def _compared(first: float, second: float) -> dict[str, Any]:
    readings = [
        {"thermometer": "t-01", "value": first, "unit": "°C"},
        {"thermometer": "t-02", "value": second, "unit": "°C"},
    ]
    higher, lower = ("t-01", "t-02") if first > second else ("t-02", "t-01")
    difference = round(abs(first - second), 2)
    return {
        "readings": readings,
        "difference": {"value": difference, "unit": "°C"},
        "higher": higher,
        "lower": lower,
    }


def water(first: float = 18.5, second: float = 24.0) -> Registry:
    registry = Registry()

    def read_calls() -> list[tuple[dict[str, Any], str]]:
        return [({"id": i}, f"the water temperature of {name}") for i, name in THINGS.items()]

    def compare_calls() -> list[tuple[dict[str, Any], str]]:
        return [({"a": "t-01", "b": "t-02"}, "which of the pond and the aquarium is warmer")]

    @registry.skill(calls=read_calls, timeout=1.0)
    def water_temperature(id: str) -> dict[str, Any]:
        """The water temperature one thermometer reads."""
        value = first if id == "t-01" else second
        return {"thermometer": id, "value": value, "unit": "°C"}

    @registry.skill(calls=compare_calls, timeout=1.0)
    def compare_water(a: str, b: str) -> dict[str, Any]:
        """Which of two thermometers reads the warmer water, and by how much."""
        return _compared(first, second)

    return registry


def _named(registry: Registry) -> dict[str, frozenset[str]]:
    calls = [call for spec in registry.select(None) for call in spec.ready_calls()]
    return dict(choice_words(calls, ENGLISH))


def _said(question: str, result: dict[str, Any], registry: Registry) -> list[str]:
    spec = registry.get("compare_water")
    assert spec is not None
    arguments = {"a": "t-01", "b": "t-02"}
    called = [[*arguments.values(), *spec.gets(arguments)]]
    results = [("compare_water", result)]
    return fitting_sentences(Question.parse(question), results, registry, called, _named(registry))


def _grounded(question: str, result: dict[str, Any], answer: str, registry: Registry) -> bool:
    replies = [json.dumps({"skill_name": "compare_water", "arguments": {"a": "t-01", "b": "t-02"}})]
    replies.append(json.dumps({"final_answer": answer}))
    state = Agent(MockModel(replies), registry, grounding=Grounding()).run(question, max_retries=0)
    return state.outcome == "answered" and state.final_answer == answer


def test_the_words_every_listed_call_of_a_value_gets_name_it() -> None:
    named = _named(water())
    # The pair's call names both things: only what every call of the id says is its own.
    assert {"pond"} <= named["t-01"] and "aquarium" not in named["t-01"]
    assert {"aquarium"} <= named["t-02"] and "pond" not in named["t-02"]
    # Another argument's value is no word of this one ("warmer" is the pair's, not t-01's).
    assert "warmer" not in named["t-01"]
    calls = [({"name": "bme", "quantity": "humidity"}, "the humidity in % from the chip bme")]
    calls.append(({"name": "bme", "quantity": "pressure"}, "the pressure in hPa from the chip bme"))
    assert choice_words(calls, ENGLISH)["bme"] == frozenset({"in", "from", "chip", "bme"})


def test_a_compared_reading_is_named_as_the_skills_call_it() -> None:
    registry = water()
    result = _compared(18.5, 24.0)
    for question in ("How warm is the pond?", "Can you read the pond?"):
        said = _said(question, result, registry)
        assert said == ["The t-01 is 18.5 °C."], (question, said)
        assert _grounded(question, result, said[0], registry), question
    # A thing neither call names is still nobody's.
    assert _said("How warm is the bathtub?", result, registry) == []


@given(
    first=st.floats(min_value=-10, max_value=40, allow_nan=False).map(lambda v: round(v, 1)),
    second=st.floats(min_value=-10, max_value=40, allow_nan=False).map(lambda v: round(v, 1)),
    warmer=st.booleans(),
)
def test_is_one_warmer_than_the_other_is_answered_by_the_one_the_result_names(
    first: float, second: float, warmer: bool
) -> None:
    if first == second:
        return  # the result names no higher one
    registry = water(first, second)
    result = _compared(first, second)
    way = "warmer" if warmer else "colder"
    said = _said(f"Is the pond {way} than the aquarium?", result, registry)
    pond_is = first > second if warmer else first < second
    it = "t-01" if pond_is else "t-02"
    expected = f"{'Yes' if pond_is else 'No'}, the {it} is {way}."
    assert said == [expected], said


def test_a_yes_or_no_comparison_no_result_settles_says_nothing() -> None:
    registry = water()
    result = _compared(18.5, 24.0)
    # A thing the result does not name: neither yes nor no, nor a value in their place.
    assert _said("Is the bathtub warmer than the aquarium?", result, registry) == []
    # Both named alike: the one named is not told apart.
    assert _said("Is the pond warmer than the pond?", result, registry) == []


def test_a_yes_or_no_comparison_is_grounded() -> None:
    registry = water()
    result = _compared(18.5, 24.0)
    question = "Is the aquarium warmer than the pond?"
    said = _said(question, result, registry)
    assert said == ["Yes, the t-02 is warmer."]
    assert _grounded(question, result, said[0], registry)
