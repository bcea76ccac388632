"""Whether a thing is there, asked with "have", "is there" or a state that says so ("connected",
"installed"): read by the grammar (agent/question.py, the language's ``having`` and
``presence``), answered "Yes, ..." from a listing's entry whose own words hold what was asked
(agent/listed.py), never "No" from a listing, else "I cannot tell". Real result shapes: the
built-in ``list_sensors``'s, and a plugin's listing of another shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.question import Question
from edge_agentd.guidance.render import fitting_sentences

SENSORS = {
    "count": 2,
    "sensors": [
        {"name": "thermal_zone0", "kind": "thermal_zone", "label": "cpu-thermal",
         "measures": [{"quantity": "temperature", "unit": "°C"}]},
        {"name": "bme280", "kind": "iio", "label": "bme280 (iio:device0)",
         "measures": [{"quantity": "humidity", "unit": "%RH"},
                      {"quantity": "pressure", "unit": "hPa"}]},
    ],
}  # fmt: skip
GARDEN = {
    "zones": 2,
    "devices": [
        {"id": "valve-1", "type": "water valve", "zone": "lawn"},
        {"id": "probe-a", "type": "soil moisture probe", "zone": "beds"},
    ],
}


def home() -> Registry:
    registry = Registry()

    @registry.skill
    def list_sensors(quantity: str | None = None) -> dict[str, Any]:
        """Every sensor on this device, or those that measure a quantity."""
        if quantity is None:
            return SENSORS
        return {"count": 0, "quantity": quantity, "sensors": []}

    @registry.skill
    def garden() -> dict[str, Any]:
        """The garden controller's devices."""
        return GARDEN

    return registry


def _said(question: str, skill: str, result: dict[str, Any]) -> list[str]:
    skills = {spec.name: spec for spec in home().select(None)}
    return fitting_sentences(Question.parse(question), [(skill, result)], skills)


def _grounded(question: str, skill: str, arguments: dict[str, Any], answer: str) -> bool:
    replies = [json.dumps({"skill_name": skill, "arguments": arguments})]
    replies.append(json.dumps({"final_answer": answer}))
    state = Agent(MockModel(replies), home(), grounding=Grounding()).run(question, max_retries=0)
    return state.outcome == "answered" and state.final_answer == answer


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("Does the Pi have a pressure sensor?", "pressure sensor"),
        ("Do you have any humidity sensors?", "humidity sensors"),
        ("Could you tell me if an air quality sensor is attached?", "air quality sensor"),
        ("Is there a soil probe?", "soil probe"),
    ],
)
def test_the_grammar_reads_a_question_of_whether_a_thing_is_there(
    question: str, subject: str
) -> None:
    parsed = Question.parse(question)
    assert parsed.exists
    assert parsed.subject is not None and " ".join(parsed.subject.words) == subject
    assert not Question.parse("Is the front door open?").exists
    assert not Question.parse("What does the probe read?").exists


@pytest.mark.parametrize(
    ("question", "skill", "result", "expected"),
    [
        ("Does the Pi have a pressure sensor?", "list_sensors", SENSORS,
         "Yes, there is a pressure sensor: bme280."),
        ("Do you have any sensors that read?", "list_sensors", SENSORS,
         "Yes, there are sensors: thermal_zone0 and bme280."),
        ("Is a soil moisture probe installed?", "garden", GARDEN,
         "Yes, there is a soil moisture probe: probe-a."),
        ("Is there a water valve on the lawn?", "garden", GARDEN,
         "Yes, there is a water valve: valve-1."),
    ],
)  # fmt: skip
def test_a_listed_thing_that_holds_what_was_asked_is_there(
    question: str, skill: str, result: dict[str, Any], expected: str
) -> None:
    assert _said(question, skill, result) == [expected]
    arguments: dict[str, Any] = {}
    assert _grounded(question, skill, arguments, expected)


@pytest.mark.parametrize(
    ("question", "skill", "result"),
    [
        # No entry holds every word asked: not "No" (a listing need not be complete).
        ("Does this device have a CO2 sensor?", "list_sensors", SENSORS),
        ("Is there a water probe?", "garden", GARDEN),
        ("Is a rain gauge connected?", "garden", GARDEN),
        # A filter that echoes the word asked lists nothing.
        ("Is there a humidity sensor?", "list_sensors",
         {"count": 0, "quantity": "humidity", "sensors": []}),
    ],
)  # fmt: skip
def test_nothing_is_said_there_or_not_without_an_entry_that_is_it(
    question: str, skill: str, result: dict[str, Any]
) -> None:
    assert _said(question, skill, result) == []


def test_grounding_refuses_no_when_a_listing_holds_what_was_asked() -> None:
    question = "Is a soil moisture probe installed?"
    assert not _grounded(question, "garden", {}, "No, the soil moisture probe is not installed.")
