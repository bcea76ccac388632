""" "What is the washer doing?" asks what state a thing is in: its state line is the one
offered. And a state is never said as the thing's name ("The running state time left ...")."""

from __future__ import annotations

from typing import Any

from edge_agentd import Registry
from edge_agentd.agent.question import Question
from edge_agentd.guidance.render import fitting_sentences

WASHER: dict[str, Any] = {"state": "running", "time_left": {"value": 34, "unit": "min"}}
PRINTER: dict[str, Any] = {"status": "printing", "pages_left": 12, "toner_percent": 40}


def _said(question: str, skill: str, result: dict[str, Any]) -> list[str]:
    registry = Registry()

    @registry.skill(name=skill)
    def anything() -> dict[str, Any]:
        """Whatever the appliance says of itself."""
        return result

    return fitting_sentences(Question.parse(question), [(skill, result)], registry)


def test_doing_asks_for_the_state() -> None:
    # Said of the thing itself, as a person says it, never of its field ("The state is ...").
    assert _said("What is the washer doing?", "washer", WASHER) == ["The washer is running."]
    assert _said("What is the label printer doing?", "label_printer", PRINTER) == [
        "The label printer is printing."
    ]
    # A thing no skill reports on is doing nothing the engine can say.
    assert _said("What is the dishwasher doing?", "washer", WASHER) == []


def test_a_state_is_no_name_of_its_object() -> None:
    said = _said("How long is left on the washer?", "washer", WASHER)
    assert said and not any("running" in sentence for sentence in said), said


NONE_FOUND: dict[str, Any] = {"count": 0, "sensors": []}


def test_an_empty_list_the_question_names_says_there_are_none() -> None:
    question = Question.parse("Which sensors are connected to this device?")
    registry = Registry()
    said = fitting_sentences(question, [("list_sensors", NONE_FOUND)], registry)
    assert said == ["There are no sensors."]
    # A listing narrowed to one quantity says nothing of the sensors it left out.
    narrowed = fitting_sentences(
        question, [("list_sensors", NONE_FOUND)], registry, called=[["humidity"]]
    )
    assert narrowed == []
    # Nor does an empty list of other things answer.
    other = fitting_sentences(
        Question.parse("Which doors are open?"), [("list_sensors", NONE_FOUND)], registry
    )
    assert other == []
