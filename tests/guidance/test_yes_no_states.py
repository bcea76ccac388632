""""Yes, ..." or "No, ..." only from a text that is a state: a word the skill itself names as
one its object can be, not any text a result holds, nor a word the call passed."""

from __future__ import annotations

from typing import Any

from edge_agentd import Registry
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.question import Question
from edge_agentd.guidance.render import fitting_sentences

LISTING = {
    "count": 1,
    "quantity": "humidity",
    "sensors": [{"name": "bme280", "kind": "iio", "measures": [{"quantity": "humidity"}]}],
}


def _skills() -> dict[str, Any]:
    registry = Registry()

    @registry.skill(examples=("What sensors are connected?",))
    def list_sensors(quantity: str | None = None) -> dict[str, Any]:
        """Every sensor on this device, or those that measure a quantity."""
        return LISTING

    @registry.skill
    def garage_door() -> dict[str, str]:
        """Whether the garage door is open or closed."""
        return {"door": "garage", "position": "closed"}

    return {spec.name: spec for spec in registry.select(None)}


def test_a_text_that_is_no_state_answers_no_yes_or_no() -> None:
    question = Question.parse("Can you tell me whether a humidity sensor is connected?", ENGLISH)
    skills = _skills()
    assert fitting_sentences(question, [("list_sensors", LISTING)], skills) == []
    # Nor when the call asked for that very word: the argument is not the sensor's state.
    called = [["humidity"]]
    assert fitting_sentences(question, [("list_sensors", LISTING)], skills, called) == []


def test_a_state_the_skill_names_still_answers() -> None:
    question = Question.parse("Is the garage door open?", ENGLISH)
    result = {"door": "garage", "position": "closed"}
    said = fitting_sentences(question, [("garage_door", result)], _skills())
    assert said and all(s.startswith("No, ") and "closed" in s for s in said), said
