"""A result answers the question only if the call that gave it asked what the question asks:
a driving model that passed "next friday" for "What is the date of next Wednesday?" got a
result whose every sentence is true of Friday, and the engine said one of them as the answer."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from edge_agentd import Agent, Grounding, MockModel, Registry
from edge_agentd.guidance.answering import Answering

DAYS = {"wednesday": dt.date(2026, 12, 9), "friday": dt.date(2026, 12, 11)}


def calendar() -> Registry:
    registry = Registry()

    @registry.skill
    def find_date(text: str) -> dict[str, Any]:
        """The date a phrase such as 'next friday' names."""
        day = DAYS[text.rsplit(maxsplit=1)[-1].casefold()]
        return {"date": day.isoformat(), "weekday": day.strftime("%A")}

    return registry


def _run(question: str, replies: list[str]) -> Any:
    model = MockModel(replies, uses_action_schema=True)
    agent = Agent(model, calendar(), guidance=Answering(), grounding=Grounding())
    return agent.run(question, max_iterations=4, max_retries=0)


def call(text: str) -> str:
    return json.dumps({"skill_name": "find_date", "arguments": {"text": text}})


@pytest.mark.parametrize("asked_as", ["next Wednesday", "Wednesday"])
def test_a_call_of_the_question_s_own_words_is_answered_by_the_engine(asked_as: str) -> None:
    state = _run("What is the date of next Wednesday?", [call(asked_as)])
    assert state.final_answer is not None and "2026-12-09" in state.final_answer


def test_a_call_that_asked_for_another_thing_is_no_answer() -> None:
    replies = [call("next friday"), '{"final_answer": "I cannot tell."}']
    state = _run("What is the date of next Wednesday?", replies)
    # Not "The date is 2026-12-11.": the engine offers no sentence of Friday's result.
    assert state.final_answer == "I cannot tell."


def test_grounding_takes_no_value_of_a_call_that_asked_for_another_thing() -> None:
    # The model's own words, no engine sentence: grounding alone refuses Friday's date.
    replies = [call("next friday"), '{"final_answer": "Next Wednesday is 2026-12-11."}']
    model = MockModel(replies)
    state = Agent(model, calendar(), grounding=Grounding()).run(
        "What is the date of next Wednesday?", max_iterations=4, max_retries=0
    )
    assert state.final_answer is None
    refused = [e for e in state.stream.root if type(e).__name__ == "ValidationErrorObservation"]
    assert refused and refused[-1].error_type == "value_not_in_evidence"


def test_a_number_the_question_does_not_write_is_no_part_of_what_it_asks() -> None:
    # "4/7/1976" of "4 July 1976": a conversion the model made, which a skill that reads the
    # month first takes for April 7.
    registry = Registry()

    @registry.skill
    def weekday_of(text: str) -> dict[str, Any]:
        """The weekday of a date."""
        return {"date": "1976-04-07", "weekday": "Wednesday"}

    replies = [
        json.dumps({"skill_name": "weekday_of", "arguments": {"text": "4/7/1976"}}),
        '{"final_answer": "The weekday is Wednesday."}',
        '{"final_answer": "I cannot tell."}',
    ]
    state = Agent(MockModel(replies), registry, grounding=Grounding()).run(
        "What day of the week was 4 July 1976?", max_iterations=4
    )
    assert state.final_answer == "I cannot tell."
    asked = [json.dumps({"skill_name": "weekday_of", "arguments": {"text": "4 July 1976"}})]
    state = Agent(MockModel([*asked, '{"final_answer": "It was a Wednesday."}']), registry,
                  grounding=Grounding()).run("What day of the week was 4 July 1976?")  # fmt: skip
    assert state.final_answer == "It was a Wednesday."
