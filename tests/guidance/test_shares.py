"""A yes-or-no question that compares a share with a value ("more than half of", "over a
quarter of", "more than 80 % of"): answered "Yes, ..." or "No, ..." from a percent of the very
thing it asks about (daemon/guidance/compared.py), else nothing, so "I cannot tell": never from
a number of another thing, nor from the share used when the share free was asked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.question import Question
from edge_agentd.guidance.render import fitting_sentences

STATUS = {
    "load_average": {"1min": 0.45, "5min": 0.43, "15min": 0.62},
    "memory": {"total_mib": 24105.2, "available_mib": 23620.6, "used_percent": 2.0},
    "disk": {"path": "/", "total_gib": 251.97, "free_gib": 68.79, "used_percent": 72.6},
}
BME280 = {
    "sensor": "bme280",
    "readings": [{"quantity": "humidity", "value": 41.5, "unit": "%RH"}],
}
PRINTER = {"toner": {"used_percent": 81}, "battery": {"charge_percent": 40}}
TOTALS = {"memory": {"total_mib": 2048.0, "used_mib": 1800.0}}


def home() -> Registry:
    registry = Registry()

    @registry.skill
    def system_status() -> dict[str, Any]:
        """Load averages, memory and disk usage of this device."""
        return STATUS

    @registry.skill
    def read_sensor() -> dict[str, Any]:
        """The BME280's readings."""
        return BME280

    @registry.skill
    def printer() -> dict[str, Any]:
        """The label printer's toner and battery."""
        return PRINTER

    @registry.skill
    def totals() -> dict[str, Any]:
        """Memory of the box."""
        return TOTALS

    return registry


def _said(question: str, *skills: str) -> list[str]:
    registry = home()
    results = [(name, registry.call(registry.get(name), {})) for name in skills]  # type: ignore[arg-type]
    return fitting_sentences(Question.parse(question), results, registry)


@pytest.mark.parametrize(
    ("question", "skills", "expected"),
    [
        ("Is more than a quarter of the memory in use?", ("system_status",),
         ["No, the memory used is 2.0 %."]),
        ("Is over half the disk used?", ("system_status",), ["Yes, the disk used is 72.6 %."]),
        ("Is more than 90 % of the disk used?", ("system_status", "read_sensor"),
         ["No, the disk used is 72.6 %."]),
        ("Is under half of the printer's toner used?", ("printer",),
         ["No, the toner used is 81 %."]),
        ("Is less than half of the battery charged?", ("printer",),
         ["Yes, the battery charge is 40 %."]),
    ],
)  # fmt: skip
def test_a_share_is_compared_with_a_percent_of_the_thing_asked(
    question: str, skills: tuple[str, ...], expected: list[str]
) -> None:
    said = _said(question, *skills)
    assert said == expected
    registry = home()
    replies = [json.dumps({"skill_name": name, "arguments": {}}) for name in skills]
    replies.append(json.dumps({"final_answer": expected[0]}))
    state = Agent(MockModel(replies), registry, grounding=Grounding()).run(question, max_retries=0)
    assert state.final_answer == expected[0], list(state.stream)


@pytest.mark.parametrize(
    ("question", "skills"),
    [
        # The share free is not the share used beside it.
        ("Is more than a third of the memory free?", ("system_status",)),
        ("Is less than a tenth of the disk free?", ("system_status",)),
        # A percent of another thing (the humidity) is no share of the disk.
        ("Is more than 30 % of the disk in use?", ("read_sensor",)),
        # Used and total with no percent: no number the engine would compute.
        ("Is over half of the memory used?", ("totals",)),
    ],
)  # fmt: skip
def test_no_share_is_said_without_a_percent_of_the_very_thing(
    question: str, skills: tuple[str, ...]
) -> None:
    assert _said(question, *skills) == []


def test_the_grammar_reads_what_a_share_is_of() -> None:
    subject = Question.parse("Is more than half of the memory in use?").subject
    assert subject is not None and subject.head == "memory"
    subject = Question.parse("Are fewer than 3 of the sensors warm?").subject
    assert subject is not None and subject.head == "sensors"
