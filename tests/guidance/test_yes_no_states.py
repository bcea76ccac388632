""""Yes, ..." or "No, ..." only from a text that is a state: a word the skill itself names as
one its object can be, not any text a result holds, nor a word the call passed."""

from __future__ import annotations

from typing import Any

from edge_agentd import Registry
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.question import Question
from edge_agentd.guidance.render import cannot_tell_sentence, fitting_sentences

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
    """"humidity" under ``quantity`` is no state of a sensor: it gives no "No" to whether one
    is connected. The listing's entry that measures humidity says one is there."""
    question = Question.parse("Can you tell me whether a humidity sensor is connected?", ENGLISH)
    skills = _skills()
    listed = ["Yes, there is a humidity sensor: bme280."]
    assert fitting_sentences(question, [("list_sensors", LISTING)], skills) == listed
    # Nor when the call asked for that very word: the argument is not the sensor's state.
    called = [["humidity"]]
    assert fitting_sentences(question, [("list_sensors", LISTING)], skills, called) == listed
    # A listing filtered by the word asked, that lists nothing, says neither.
    empty = {"count": 0, "quantity": "humidity", "sensors": []}
    assert fitting_sentences(question, [("list_sensors", empty)], skills) == []


def test_a_state_the_skill_names_still_answers() -> None:
    question = Question.parse("Is the garage door open?", ENGLISH)
    result = {"door": "garage", "position": "closed"}
    said = fitting_sentences(question, [("garage_door", result)], _skills())
    assert said and all(s.startswith("No, ") and "closed" in s for s in said), said


def test_a_reason_that_quotes_the_question_back_is_not_said() -> None:
    """A skill that took the question for a name fails with the question inside its error:
    that says nothing of why, and would seem to state what was asked."""
    question = Question.parse("Please tell me whether the patio door is open.", ENGLISH)
    error = "[Errno 2] No such file: '/srv/doors/please tell me whether the patio door is open.'"
    said = cannot_tell_sentence(question, error)
    assert "Errno" not in said and "/srv" not in said
    assert said.startswith(ENGLISH.cannot_tell)
    cpu = Question.parse("How warm is the CPU?", ENGLISH)
    reason = "no thermal zone was found under /sys/class/thermal"
    assert reason in cannot_tell_sentence(cpu, reason)  # a reason of its own is still said
