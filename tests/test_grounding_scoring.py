"""bench_grounding.py's scorer (scripts/bench/grounding_scoring.py): states, claims and questions
no skill answers, judged on the answers issue 36 quotes."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "bench"))

from bench_competence import Answer, CannotTell, Number
from grounding_scoring import NoneFound, Since, State, judge_grounded

CLOSED = {"door": "back", "state": "closed", "since": "2026-12-05 11:58"}
BARREL = {"volume": {"value": 137.5, "unit": "L"}}
CPU = {"sensor": "thermal_zone0", "quantity": "temperature", "value": 51.687, "unit": "°C"}


def _answer(text: str, *results: Any) -> Answer:
    return Answer("answered", text, 2, 1.0, 0, 0, [], results=list(results))


def test_a_state_the_result_does_not_hold_misleads() -> None:
    check = State("closed", asked="open")
    question = "Is the back door open?"
    right, misleads = judge_grounded(check, _answer("Yes, the back door is open.", CLOSED), question)
    assert not right and "state 'open'" in misleads and "says yes" in misleads
    assert judge_grounded(check, _answer("No, the back door is closed.", CLOSED), question) == (
        True,
        [],
    )
    # A negated state claims nothing.
    assert judge_grounded(check, _answer("The back door is not open.", CLOSED), question) == (
        True,
        [],
    )


def test_a_claim_no_result_makes_misleads() -> None:
    q = "How much water is in the rain barrel?"
    right, misleads = judge_grounded(
        Number([137.5]), _answer("The rain barrel is getting empty: 137.5 L.", BARREL), q
    )
    assert not right and any("getting" in m for m in misleads)
    right, misleads = judge_grounded(
        Number([51.687]), _answer("The CPU is overheating: 51.687 °C.", CPU), "How hot is the CPU?"
    )
    assert not right and any("overheat" in m for m in misleads)
    assert judge_grounded(Number([137.5]), _answer("It holds 137.5 L.", BARREL), q) == (True, [])


def test_answering_a_question_no_skill_answers_misleads() -> None:
    q = "Is the garage door open?"
    right, misleads = judge_grounded(CannotTell(), _answer("No, it is closed.", CLOSED), q)
    assert not right and "answers a question no skill answers" in misleads
    told = judge_grounded(CannotTell(), _answer("I cannot tell: no skill reads it.", CLOSED), q)
    assert told == (True, [])


def test_since_when_is_the_time_or_how_long_ago() -> None:
    now = dt.datetime(2026, 12, 5, 12, 23)
    check = Since(dt.datetime(2026, 12, 5, 11, 58), now)
    q = "Since when has the back door been open?"
    opened = {**CLOSED, "state": "open"}
    assert judge_grounded(check, _answer("It has been open since 11:58.", opened), q) == (True, [])
    assert judge_grounded(check, _answer("For 25 minutes.", opened), q) == (True, [])
    right, misleads = judge_grounded(check, _answer("Since 2023-04-15 12:34.", opened), q)
    assert not right and misleads


def test_none_found_is_right_on_a_machine_without_sensors() -> None:
    empty = {"count": 0, "sensors": []}
    q = "Which sensors are connected to this device?"
    assert judge_grounded(NoneFound(), _answer("No sensors are connected.", empty), q)[0]
    assert not judge_grounded(NoneFound(), _answer("There are 3 sensors.", empty), q)[0]


def test_the_questions_words_are_no_evidence_for_a_claim() -> None:
    """"How full is the tank?" asks; "The tank is full." for 45.8 % claims."""
    tank = {"fill": {"value": 45.8, "unit": "%"}}
    q = "How full is the water tank, in percent?"
    right, misleads = judge_grounded(Number([45.8]), _answer("The tank is full: 45.8 %.", tank), q)
    assert not right and "claim 'full'" in misleads
    assert judge_grounded(Number([45.8]), _answer("It is 45.8 % full.", tank), q) == (True, [])
