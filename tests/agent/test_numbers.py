"""A number the question writes that no result and no call states: "What weekday will it be in
10 days?" after a read of the clock is not answered with today's weekday, by the engine or by a
model (daemon/agent/numbers.py, grounding's ``number_not_in_evidence``)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.grounding import NUMBER_NOT_IN_EVIDENCE, Grounding
from edge_agentd.agent.numbers import unstated_number
from edge_agentd.agent.question import Question
from edge_agentd.guidance.render import fitting_sentences

CLOCK = {"date": "2026-12-07", "time": "00:10:49", "weekday": "Monday", "zone": "UTC"}
DAYS = {"date": "2026-12-17", "weekday": "Thursday", "days_from_today": 10}


def _unstated(question: str, result: Any, called: list[str] | None = None) -> str | None:
    return unstated_number(Question.parse(question), [result], [called or []])


def test_a_number_no_result_or_call_states_is_unstated() -> None:
    assert _unstated("What weekday will it be in 10 days?", CLOCK) == "10"
    # A time's digits are no number of its own: "00:10:49" states no 10.
    assert _unstated("What weekday will it be in 10 days?", DAYS) is None
    assert _unstated("What weekday will it be in 10 days?", CLOCK, ["in 10 days"]) is None
    # A key's amount, a text's number word, a value.
    load = {"load_average": {"1min": 0.42, "5min": 0.37}}
    assert _unstated("What is the 5 minute load average?", load) is None
    assert _unstated("Is bedroom 2 warm?", {"room": "bedroom 2", "value": 21.5}) is None
    assert _unstated("What was the pond temperature 2 hours ago?", {"value": 18.5}) == "2"
    # The number a comparison is made with is the comparison's.
    assert _unstated("Is the pond warmer than 20 °C?", {"value": 18.5}) is None
    # A name's digits are its own ("1-Wire", "BME280").
    assert _unstated("Is the 1-Wire probe colder than the BME280?", {"value": 9.5}) is None


def test_the_engine_offers_nothing_for_another_day() -> None:
    question = Question.parse("What weekday will it be in 10 days?")
    assert fitting_sentences(question, [("clock", CLOCK)]) == []
    assert fitting_sentences(question, [("days_ahead", DAYS)]) == ["The weekday is Thursday."]


def test_grounding_refuses_today_s_weekday_for_another_day() -> None:
    registry = Registry()

    @registry.skill
    def clock() -> dict[str, Any]:
        """The date, time and weekday now."""
        return CLOCK

    replies = [json.dumps({"skill_name": "clock", "arguments": {}})]
    replies.append(json.dumps({"final_answer": "It will be Monday."}))
    state = Agent(MockModel(replies), registry, grounding=Grounding()).run(
        "What weekday will it be in 10 days?", max_retries=0
    )
    refused = [e for e in state.stream if getattr(e, "error_type", None)]
    assert state.outcome != "answered"
    assert [e.error_type for e in refused] == [NUMBER_NOT_IN_EVIDENCE]  # type: ignore[attr-defined]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=40,
)


@given(result=_json, question=st.text(max_size=80), called=st.lists(st.text(max_size=20)))
def test_any_result_and_question_are_read_without_fault(
    result: Any, question: str, called: list[str]
) -> None:
    """Hostile input: any JSON result, question and call words give a number of the question or
    None, never an error."""
    parsed = Question.parse(question)
    found = unstated_number(parsed, [result], [called])
    assert found is None or found in question


def test_a_query_of_several_sentences_states_its_own_numbers() -> None:
    """A trigger's query leads with the reading that fired it and its limit, and ends with
    when: those numbers are its context, not what it asks about."""
    query = (
        "read_sensor 28-0316a2791bff reads -5 °C, above the limit of -10 °C. "
        "Is the freezer too warm?\n\n(The trigger freezer fired at 2026-12-07 00:10:49.)"
    )
    assert unstated_number(Question.parse(query), [{"value": -5.0}], [[]]) is None
    # A sign is no part of the number the grammar reads: "-5 °C" is the result's -5.0.
    assert _unstated("Is the freezer at -5 °C?", {"value": -5.0}) is None
    assert _unstated("Is the freezer below -3 °C?", {"value": -5.0}) is None
