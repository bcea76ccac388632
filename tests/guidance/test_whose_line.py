"""A word that says which one does not pick another thing's line (daemon/guidance/whose.py;
docs/design.md, "Bound to the question"): "free" of a question about RAM is no reason to state
a disk's free space, when nothing the line is in names what was asked. Real result shapes:
``system_status``'s as the built-in skill returns it, and plugins' of other shapes."""

from __future__ import annotations

from typing import Any

import pytest

from edge_agentd import Registry
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.prompt import PLAIN
from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import result_line_parts
from edge_agentd.guidance.candidates import candidates_for
from edge_agentd.guidance.render import bound_sentences, fitting_sentences

STATUS = {
    "load_average": {"1min": 0.45, "5min": 0.43, "15min": 0.62},
    "memory": {"total_mib": 24105.2, "available_mib": 23620.6, "used_percent": 2.0},
    "disk": {"path": "/", "total_gib": 251.97, "free_gib": 68.79, "used_percent": 32.2},
    "uptime": {"seconds": 20249, "hours": 5.6, "days": 0.23, "text": "5 h 37 min"},
}
NAS = {
    "pools": [
        {"name": "tank", "free_tb": 3.5, "used_percent": 61.0},
        {"name": "scratch", "free_tb": 0.8, "used_percent": 92.0},
    ],
    "fans": {"rpm": 1200, "state": "spinning"},
}
READING = {
    "sensor": "28-0316a2791bff",
    "label": "DS18B20",
    "readings": [{"quantity": "temperature", "value": 12.437, "unit": "°C"}],
}


def _skills() -> dict[str, Any]:
    registry = Registry()

    @registry.skill(examples=("How much RAM is in use?",))
    def system_status() -> dict[str, Any]:
        """Load averages, memory, disk usage of / and uptime of this device."""
        return STATUS

    @registry.skill
    def nas() -> dict[str, Any]:
        """The storage pools of the network drive and its fans."""
        return NAS

    @registry.skill
    def read_sensor(name: str) -> dict[str, Any]:
        """Current value of one sensor, with units."""
        return READING

    return {spec.name: spec for spec in registry.select(None)}


def _said(question: str, skill: str, result: dict[str, Any]) -> list[str]:
    return fitting_sentences(Question.parse(question), [(skill, result)], _skills())


@pytest.mark.parametrize(
    ("question", "skill", "result"),
    [
        # The thing asked is named by no line; the word that says which one names another's.
        ("How much RAM is free at the moment?", "system_status", STATUS),
        ("Is there much unused RAM?", "system_status", STATUS),
        ("Tell me the free swap.", "system_status", STATUS),
        ("How much of the network drive is used?", "nas", NAS),
    ],
)
def test_a_word_that_says_which_one_does_not_pick_another_things_line(
    question: str, skill: str, result: dict[str, Any]
) -> None:
    said = _said(question, skill, result)
    assert said == [], said


@pytest.mark.parametrize(
    ("question", "skill", "result", "expected"),
    [
        # The object the line is in is the question's thing: its line is offered as before.
        ("How much disk space is free?", "system_status", STATUS, ["The disk free is 68.79 GiB."]),
        ("Used disk, in percent?", "system_status", STATUS, ["The disk used is 32.2 %."]),
        ("How much memory is available?", "system_status", STATUS,
         ["The memory available is 23620.6 MiB."]),
        ("Free space in the tank pool?", "nas", NAS, ["The tank free is 3.5 TB."]),
        # Named by its object's label, not by a word of its key.
        ("Please read the DS18B20 probe.", "read_sensor", READING,
         ["The temperature is 12.437 °C."]),
    ],
)  # fmt: skip
def test_a_line_whose_object_the_question_names_is_still_offered(
    question: str, skill: str, result: dict[str, Any], expected: list[str]
) -> None:
    said = _said(question, skill, result)
    assert set(expected) <= set(said), said
    assert not any("memory" in s for s in said if "disk" in question), said


def test_the_skills_own_words_in_a_calls_description_name_no_line() -> None:
    """Under guidance, the words of the call that gave a result are its candidate's whole
    description: the skill's examples ("How much RAM is in use?") are every call's, and say
    nothing of which object of the result is the RAM."""
    skills = _skills()
    [candidate] = candidates_for(skills["system_status"], PLAIN)
    question = Question.parse("How much RAM is free at the moment?")
    asked = [("system_status", STATUS, result_line_parts(STATUS, ENGLISH))]
    assert bound_sentences(asked, question, skills, [[candidate.description]]) == []
    # What a listed call gets is that call's own: its result is of the thing it names.
    called = [["28-0316a2791bff", "the temperature from the 1-Wire probe DS18B20"]]
    probe = Question.parse("Can you read the 1-Wire probe?")
    asked = [("read_sensor", READING, result_line_parts(READING, ENGLISH))]
    assert "The temperature is 12.437 °C." in bound_sentences(asked, probe, skills, called)


COMPARED = {
    "quantity": "temperature",
    "readings": [
        {"sensor": "thermal_zone0", "label": "cpu-thermal", "value": 48.312, "unit": "°C"},
        {"sensor": "28-0316a2791bff", "label": "DS18B20", "value": 12.437, "unit": "°C"},
    ],
    "difference": {"value": 35.875, "unit": "°C"},
    "higher": "thermal_zone0",
    "lower": "28-0316a2791bff",
}


@pytest.mark.parametrize(
    ("question", "value", "other"),
    [
        ("Would you read the DS18B20 for me?", "12.437", "48.312"),
        ("What does the cpu-thermal zone say?", "48.312", "12.437"),
    ],
)
def test_a_compared_reading_is_named_by_its_own_label_never_by_its_siblings(
    question: str, value: str, other: str
) -> None:
    """A reading in a list is shown as one line; what it calls itself (``label``) is its own:
    a compare of the CPU and a probe, with the call's words naming both, answers each only
    with its own reading."""
    called = [["thermal_zone0", "28-0316a2791bff", "the CPU's thermal zone and the DS18B20"]]
    parsed = Question.parse(question)
    asked = [("compare_sensors", COMPARED, result_line_parts(COMPARED, ENGLISH))]
    said = bound_sentences(asked, parsed, _skills(), called)
    assert said and all(value in s and other not in s for s in said), said


def test_a_list_of_readings_is_said_by_its_readings_and_its_count_only_to_how_many() -> None:
    called = [["the CPU's thermal zone and the 1-Wire probe DS18B20"]]
    asked = [("compare_sensors", COMPARED, result_line_parts(COMPARED, ENGLISH))]
    said = bound_sentences(asked, Question.parse("Can you read the 1-Wire probe?"), _skills(), called)
    assert not any("2 readings" in s for s in said), said
    # The call names both sensors: it says of neither reading that it is the probe's.
    assert not any("48.312" in s for s in said), said
    how_many = Question.parse("How many readings are there?")
    assert "There are 2 readings." in bound_sentences(asked, how_many, _skills(), called)
