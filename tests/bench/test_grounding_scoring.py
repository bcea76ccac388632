"""bench_grounding.py's scorer (scripts/bench/grounding_scoring.py): states, claims and questions
no skill answers, judged on the answers issue 36 quotes; answers a person would write (raw keys,
yes or no to a yes-or-no question), judged on the sentences issue 41 quotes."""

from __future__ import annotations

import datetime as dt
from typing import Any

from scripts.bench.bench_competence import Answer, CannotTell, Number
from scripts.bench.grounding_scoring import (
    NoneFound,
    Since,
    State,
    YesNo,
    answers_yes_or_no,
    judge_grounded,
    person_faults,
    raw_keys,
)

CLOSED = {"door": "back", "state": "closed", "since": "2026-12-05 11:58"}
BARREL = {"volume": {"value": 137.5, "unit": "L"}}
CPU = {"sensor": "thermal_zone0", "quantity": "temperature", "value": 51.687, "unit": "°C"}


def _answer(text: str, *results: Any) -> Answer:
    return Answer("answered", text, 2, 1.0, 0, 0, [], results=list(results))


def test_a_state_the_result_does_not_hold_misleads() -> None:
    check = State("closed", asked="open")
    question = "Is the back door open?"
    right, misleads = judge_grounded(
        check, _answer("Yes, the back door is open.", CLOSED), question
    )
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
    # Cannot tell is not none, whatever words its reason has.
    declined = _answer("I cannot tell: no skill here reads the sensors.", empty)
    assert judge_grounded(NoneFound(), declined, q) == (False, [])


def test_the_questions_words_are_no_evidence_for_a_claim() -> None:
    """ "How full is the tank?" asks; "The tank is full." for 45.8 % claims."""
    tank = {"fill": {"value": 45.8, "unit": "%"}}
    q = "How full is the water tank, in percent?"
    right, misleads = judge_grounded(Number([45.8]), _answer("The tank is full: 45.8 %.", tank), q)
    assert not right and "claim 'full'" in misleads
    assert judge_grounded(Number([45.8]), _answer("It is 45.8 % full.", tank), q) == (True, [])


# -- answers a person would write (issue 41) -----------------------------------------------------

MEMORY = {"memory": {"total_mib": 3793.3, "available_mib": 2367.0, "used_percent": 37.6}}


def test_a_word_with_an_underscore_is_a_raw_key() -> None:
    assert raw_keys("The used_percent is 37.6.", [MEMORY]) == ["raw key 'used_percent'"]
    assert raw_keys("The energy_today is 7.3 kWh.") == ["raw key 'energy_today'"]
    # A name the device gives a thing is a name, not a key; so is a word of the question.
    assert raw_keys("thermal_zone0 reads 48.3 °C.", [{"sensor": "thermal_zone0"}]) == []
    assert raw_keys("bme280_2 reads 22.7 °C.", [], "What does bme280_2 read?") == []
    assert raw_keys("28-0316a2791bff reads 12.437 °C.", []) == []


def test_a_unit_glued_to_a_name_is_a_raw_key() -> None:
    """Issue 41's key dumps, and how people write a unit."""
    for dump, glued in [
        ("The charging power kw is 7.2.", "power kw"),
        ("The memory available mib is 2587.9.", "available mib"),
        ("The state of charge percent is 64.", "charge percent"),
        ("The uptime hours is 127.2.", "uptime hours"),
    ]:
        assert raw_keys(dump) == [f"unit glued to a name {glued!r}"], dump
    for said in [
        "The house draws 1840 W, or 1.84 kW.",
        "2367 MiB of memory is available; 37.6 percent is used.",
        "The tank is 45.8 % full.",
        "The fill level in percent is 45.8.",
        "How many MiB? 2367.",
        "About ten percent more than yesterday: 7.3 kWh.",
        "It has been up for 5 days, 7 hours and 13 minutes.",
        "The CO2 level in the living room is 870 ppm.",
    ]:
        assert raw_keys(said) == [], said


def test_a_raw_flag_or_a_field_as_the_subject_is_a_raw_key() -> None:
    assert raw_keys("The plugged in is true.") == ["raw flag 'true'"]
    assert raw_keys("The mail is false.") == ["raw flag 'false'"]
    assert raw_keys("The state is closed.") == ["field as the subject 'state'"]
    assert raw_keys("Uptime first. The text is 3 d 4 h 0 min.") == ["field as the subject 'text'"]
    assert raw_keys("The front door is closed.") == []
    assert raw_keys("The washing machine's state: running, 34 min left.") == []


def test_a_yes_or_no_question_is_answered_yes_no_or_i_cannot_tell() -> None:
    for said in ["Yes, the back door is open.", "No.", "no, it is closed", '"Yes."',
                 "I cannot tell: no skill here reads the patio door.", "I can’t tell."]:  # fmt: skip
        assert answers_yes_or_no(said), said
    for said in ["The state is closed.", "The front door is closed.", "Nope.", "None are.",
                 "Not open.", "It is not finished: it is running."]:  # fmt: skip
        assert not answers_yes_or_no(said), said


def test_person_faults_name_raw_keys_and_a_missing_yes_or_no() -> None:
    door = {"door": "front", "state": "closed", "since": "2026-12-05 09:13"}
    q = "Is the front door open?"
    faults = person_faults(_answer("The state is closed.", door), q, yes_no=True)
    assert faults == ["field as the subject 'state'",
                      "a yes-or-no question not answered yes, no or 'I cannot tell'"]  # fmt: skip
    assert person_faults(_answer("No, the front door is closed.", door), q, yes_no=True) == []
    # Not marked yes-or-no: a plain sentence is fine.
    assert person_faults(_answer("The front door is closed.", door), q, yes_no=False) == []
    # A saved record's fields are judged the same way; a question not answered has no faults.
    record = {"outcome": "answered", "answer": "The power kw is 1.84.", "results": []}
    assert person_faults(record, "Power?", yes_no=False) == ["unit glued to a name 'power kw'"]
    assert person_faults({"outcome": "timeout", "answer": None}, q, yes_no=True) == []


def test_a_wrong_yes_or_no_misleads() -> None:
    q = "Is the CO2 in the living room above 1000 ppm?"
    co2 = {"room": "living room", "co2": {"value": 870, "unit": "ppm"}}
    assert judge_grounded(YesNo(False), _answer("No, it is 870 ppm.", co2), q) == (True, [])
    right, misleads = judge_grounded(YesNo(False), _answer("Yes, it is 870 ppm.", co2), q)
    assert not right and "says yes" in misleads
    # No yes or no at all: not right, not misleading (the person rule counts it).
    assert judge_grounded(YesNo(False), _answer("It is 870 ppm.", co2), q) == (False, [])


def test_the_rephrased_set_is_selectable_by_prefix_and_kind() -> None:
    """``--only rephrased`` asks the whole set; ``rp-pi`` one device's share; a kind its own."""
    from scripts.bench import bench_grounding as bg
    from scripts.bench import grounding_questions as gq

    everyone = [q for device in gq.DEVICES for q in gq.QUESTIONS[device]]
    rephrased = [q for q in everyone if q.rephrased]
    assert len({q.id for q in everyone}) == len(everyone)
    assert 35 <= len(rephrased) <= 45
    assert all(q.id.startswith(f"rp-{q.device}") for q in rephrased)
    cannot = [q for q in rephrased if q.kind == "rephrased-cannot"]
    assert 0.15 <= len(cannot) / len(rephrased) <= 0.25
    for only in ("rephrased", "rp"):
        chosen = [q for d in gq.DEVICES for q in bg.select(d, only, None)]
        assert chosen == rephrased
    assert {q.device for q in bg.select("pi", "rp-pi", None)} == {"pi"}
    assert bg.select("home", "rp-home", None) == [q for q in rephrased if q.device == "home"]
    assert bg.select("bare", "rephrased-cannot", None) == [q for q in cannot if q.device == "bare"]
    assert [q.id for q in bg.select("home", "home08,rp-home03", None)] == ["home08", "rp-home03"]
    assert all(q.kind == "cannot" for q in bg.select("home", "cannot", None))


def test_an_amount_before_a_noun_is_the_result_s_however_written() -> None:
    status = {"load_average": {"1min": 0.42, "5min": 0.37, "15min": 0.31}}
    q = "What is the load average over 5 minutes?"
    said = _answer("The 5-minute load average is 0.37.", status)
    assert judge_grounded(Number([0.37]), said, q) == (True, [])
    # An amount no result holds is still a name nothing gave.
    made_up = _answer("The 10-minute load average is 0.37.", status)
    right, misleads = judge_grounded(Number([0.37]), made_up, q)
    assert not right and "name '10-minute'" in misleads


def test_the_unseen_set_stands_apart() -> None:
    """unseen_questions.py: selectable as ``unseen`` and ``un``; neither original nor rephrased
    in the report's rows."""
    from scripts.bench import bench_grounding as bg
    from scripts.bench import grounding_questions as gq

    everyone = [q for device in gq.DEVICES for q in gq.QUESTIONS[device]]
    unseen = [q for q in everyone if q.unseen]
    assert unseen and not any(q.rephrased for q in unseen)
    assert all(q.id.startswith(f"un-{q.device}") for q in unseen)
    for only in ("unseen", "un"):
        assert [q for d in gq.DEVICES for q in bg.select(d, only, None)] == unseen
    record = {"model": "270m", "device": "pi", "kind": unseen[0].kind}
    assert bg._in_row(record, bg.UNSEEN) and not bg._in_row(record, bg.ORIGINAL)
    assert not bg._in_row(record, bg.REPHRASED)
