"""A result of another of its skill's choices than the question names is no answer to it: the
skill's words, which name every choice, vouch for none of its lines (docs/design.md, "Bound to
the question")."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd import Registry
from edge_agentd.agent.question import Question
from edge_agentd.guidance.render import fitting_sentences
from edge_agentd.guidance.whose import of_another_choice

GAUGES = ("salinity", "turbidity", "alkalinity")


def aquarium() -> Registry:
    registry = Registry()

    @registry.skill(choices=lambda: {"gauge": list(GAUGES), "tank": ["reef", "pond"]})
    def read_gauge(tank: str, gauge: str = "") -> dict[str, Any]:
        """Read an aquarium gauge: salinity, turbidity or alkalinity of a tank."""
        return {}

    return registry


def _said(question: str, result: dict[str, Any]) -> list[str]:
    return fitting_sentences(Question.parse(question), [("read_gauge", result)], aquarium())


REEF_SALINITY = {
    "tank": "reef",
    "note": "calibrated",
    "readings": [{"gauge": "salinity", "value": 35.1, "unit": "ppt"}],
}


def test_a_result_of_another_choice_offers_nothing() -> None:
    # The reef's salinity, asked its turbidity: its tank and note are no turbidity.
    assert _said("What is the turbidity?", REEF_SALINITY) == []
    assert _said("What is the salinity?", REEF_SALINITY) == ["The salinity is 35.1 ppt."]


@settings(max_examples=40)
@given(st.sampled_from(GAUGES), st.sampled_from(GAUGES))
def test_only_the_choice_asked_is_stated(asked: str, read: str) -> None:
    result = {**REEF_SALINITY, "readings": [{"gauge": read, "value": 7.5, "unit": "u"}]}
    spec = aquarium().get("read_gauge")
    other = of_another_choice(spec, result, Question.parse(f"What is the {asked}?"))
    assert other is (asked != read)
    said = _said(f"What is the {asked}?", result)
    if asked != read:
        assert said == []
    else:
        assert any("7.5" in s for s in said)
    # A skill that lists no choices is judged by its words as before.
    assert of_another_choice(None, result, Question.parse(f"What is the {asked}?")) is False
