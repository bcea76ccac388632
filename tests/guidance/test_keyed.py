"""Lines a question names by what their key holds (daemon/guidance/keyed.py, agent/amounts.py;
docs/design.md, "Bound to the question"): an amount a key glues in ("5min", "24h", "2ghz"),
named by the question's same amount written any way and by no other number, and said before
its noun ("The 5-minute load average is 0.37."); a duration, asked "How long ...?"; and a key
word glued from the question's head and its of-word ("weekday" of "day of the week").

Every skill here is made up, as a plugin's author writes it; every sentence offered is put to
grounding, which must take it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_render import asked_of

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.amounts import amount_of, amounts_in, is_duration, said_amount
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.question import Question
from edge_agentd.guidance.guidance import Guidance
from edge_agentd.guidance.render import fitting_sentences

LOAD = {"load": {"1min": 0.42, "5min": 0.37, "15min": 0.31}, "cores": 4}
RAIN = {"rain_mm": {"1h": 0.4, "24h": 12.5}}
CLOCKS = {"cpu": {"1ghz": 61.0, "2ghz": 74.5}}


def home() -> Registry:
    registry = Registry()

    @registry.skill(timeout=1.0)
    def box_load() -> dict[str, Any]:
        """How busy the box is: its load averages."""
        return LOAD

    @registry.skill(timeout=1.0)
    def rain_gauge() -> dict[str, Any]:
        """Rain fallen in the garden, over the last hour and day."""
        return RAIN

    @registry.skill(timeout=1.0)
    def cpu_heat_by_clock() -> dict[str, Any]:
        """The CPU temperature at each clock speed, in °C."""
        return CLOCKS

    @registry.skill(timeout=1.0)
    def garden_pi() -> dict[str, Any]:
        """Uptime and memory of this machine, the garden Pi."""
        return {
            "memory": {"free_mib": 812.5},
            "uptime": {"seconds": 458000, "hours": 127.2, "text": "5 d 7 h 13 min"},
        }

    @registry.skill(timeout=1.0)
    def hall_door() -> dict[str, Any]:
        """Whether the hall door is open or closed."""
        return {"door": "hall", "state": "closed", "since": "08:10"}

    @registry.skill(timeout=1.0)
    def date_lookup(text: str) -> dict[str, Any]:
        """The date a text like '4 July 1976' names, and its weekday."""
        return {"date": "1976-07-04", "weekday": "Sunday", "days_from_today": -18505}

    @registry.skill(timeout=1.0)
    def light_meter() -> dict[str, Any]:
        """The light outside, and the time of day it says."""
        return {"time": "18:05", "daytime": "dusk", "lux": 40}

    return registry


def said(question: str, skill: str) -> list[str]:
    registry = home()
    spec = registry.get(skill)
    assert spec is not None
    arguments = {"text": "4 July 1976"} if skill == "date_lookup" else {}
    result = registry.call(spec, arguments)
    return fitting_sentences(Question.parse(question), [(skill, result)], registry)


def grounding_takes(question: str, skill: str, sentence: str) -> bool:
    """Whether the loop's grounding takes ``sentence`` from a model that called ``skill``."""
    arguments = {"text": "4 July 1976"} if skill == "date_lookup" else {}
    replies = [json.dumps({"skill_name": skill, "arguments": arguments})]
    replies.append(json.dumps({"final_answer": sentence}))
    state = Agent(MockModel(replies), home(), grounding=Grounding()).run(question, max_retries=0)
    return state.outcome == "answered" and state.final_answer == sentence


# -- an amount a key glues in -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "skill", "expected"),
    [
        ("What is the load over 5 minutes?", "box_load", "The 5-minute load is 0.37."),
        ("What is the 1-minute load?", "box_load", "The 1-minute load is 0.42."),
        ("What is the load over 15 minutes?", "box_load", "The 15-minute load is 0.31."),
        ("What is the 5 minute load?", "box_load", "The 5-minute load is 0.37."),
        ("What is the 5 min load?", "box_load", "The 5-minute load is 0.37."),
        ("What is the 5min load?", "box_load", "The 5-minute load is 0.37."),
        ("How much rain fell in 24 hours?", "rain_gauge", "The 24-hour rain is 12.5 mm."),
        ("What was the rain over the last 1 h?", "rain_gauge", "The 1-hour rain is 0.4 mm."),
        ("What is the CPU temperature at 2 GHz?", "cpu_heat_by_clock", "The 2 GHz CPU is 74.5."),
    ],
)
def test_an_amount_in_a_key_is_named_by_the_same_amount_written_any_way(
    question: str, skill: str, expected: str
) -> None:
    sentences = said(question, skill)
    assert sentences == [expected]
    assert grounding_takes(question, skill, expected)


@pytest.mark.parametrize(
    ("question", "skill"),
    [
        ("What is the load over 10 minutes?", "box_load"),
        ("What is the 5-hour load?", "box_load"),
        ("How much rain fell in 12 hours?", "rain_gauge"),
        ("What is the CPU temperature at 3 GHz?", "cpu_heat_by_clock"),
    ],
)
def test_an_amount_no_key_holds_names_no_line(question: str, skill: str) -> None:
    # Never the right value of the wrong one: the answer is "I cannot tell".
    assert said(question, skill) == []


def test_each_amount_is_said_before_its_noun_never_as_a_key() -> None:
    sentences = said("What is the load?", "box_load")
    assert sentences == [
        "The 1-minute load is 0.42.",
        "The 5-minute load is 0.37.",
        "The 15-minute load is 0.31.",
    ]
    for sentence in sentences:
        assert "min " not in sentence and "min." not in sentence
        assert grounding_takes("What is the load?", "box_load", sentence)


def test_a_yes_or_no_comparison_of_an_amounts_line_still_compares() -> None:
    assert said("Is the 5-minute load above 1?", "box_load") == ["No, the 5-minute load is 0.37."]


def test_the_guided_answer_names_its_amount_and_the_engine_says_it() -> None:
    question = "What is the load over 5 minutes?"
    model = asked_of("box_load", question)
    state = Agent(model, home(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert state.final_answer == "The 5-minute load is 0.37."
    assert state.stream.root[-1].made_by == "engine"


UNITS = {"min": "minute", "h": "hour", "s": "second", "ghz": "GHz"}


def _written(number: int, suffix: str, form: int) -> str:
    word = UNITS[suffix]
    if suffix == "ghz":  # a sign, not a word: no plural, no hyphen
        return [f"{number} GHz", f"{number}ghz", f"{number} ghz"][form % 3]
    return [
        f"{number} {word}s",
        f"{number}-{word}",
        f"{number} {word}",
        f"{number} {suffix}",
        f"{number}{suffix}",
    ][form % 5]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sets(st.integers(1, 60), min_size=1, max_size=4),
    st.integers(1, 60),
    st.sampled_from(sorted(UNITS)),
    st.integers(0, 14),
)
def test_only_the_questions_own_amount_names_a_line(
    keyed: set[int], asked: int, suffix: str, form: int
) -> None:
    result = {"widget_level": {f"{n}{suffix}": float(n) + 0.5 for n in sorted(keyed)}}
    registry = Registry()

    @registry.skill(timeout=1.0)
    def widget() -> dict[str, Any]:
        """The widget's level, over several spans."""
        return result

    question = f"What is the widget level over {_written(asked, suffix, form)}?"
    sentences = fitting_sentences(Question.parse(question), [("widget", result)], registry)
    if asked not in keyed:
        assert sentences == [], (question, sentences)
        return
    assert len(sentences) == 1, (question, sentences)
    assert f" is {asked}.5." in sentences[0] and suffix not in sentences[0].split()
    replies = [json.dumps({"skill_name": "widget", "arguments": {}})]
    replies.append(json.dumps({"final_answer": sentences[0]}))
    state = Agent(MockModel(replies), registry, grounding=Grounding()).run(question, max_retries=0)
    assert state.final_answer == sentences[0], state.stream.root[-1]


@pytest.mark.parametrize(
    ("word", "amount", "spoken"),
    [
        ("5min", (5.0, "minutes"), "5-minute"),
        ("24h", (24.0, "hours"), "24-hour"),
        ("10s", (10.0, "seconds"), "10-second"),
        ("2ghz", (2.0, "GHz"), "2 GHz"),
        ("1c", None, None),  # one letter is a unit only of time: "1c" may be a name
        ("28-00000c1f", None, None),
        ("load", None, None),
    ],
)
def test_an_amount_is_read_whole(
    word: str, amount: tuple[float, str] | None, spoken: str | None
) -> None:
    assert amount_of(word) == amount
    assert said_amount(word) == spoken


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_text_reads_as_amounts_without_error(text: str) -> None:
    for number, unit in amounts_in(text):
        assert number >= 0 and unit
    assert isinstance(is_duration(text, "x"), bool)


# -- a duration, asked "How long ...?" ----------------------------------------------------------


def test_how_long_the_machine_has_been_up_is_its_duration_written_out() -> None:
    question = "How long has this machine been up?"
    assert said(question, "garden_pi") == ["The uptime is 5 d 7 h 13 min."]
    assert grounding_takes(question, "garden_pi", "The uptime is 5 d 7 h 13 min.")
    model = asked_of("garden_pi", question)
    state = Agent(model, home(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert state.final_answer == "The uptime is 5 d 7 h 13 min."
    assert state.stream.root[-1].made_by == "engine"


def test_a_duration_in_a_time_unit_answers_how_long_where_none_is_written_out() -> None:
    registry = Registry()

    @registry.skill(timeout=1.0)
    def box() -> dict[str, Any]:
        """Uptime and disk of this device."""
        return {"disk_free_gib": 12.5, "uptime_s": 3600}

    for text in ("How long has the device been up?", "How long has the Pi been running?"):
        # A skill that reports on "this device" reports on the Pi the daemon runs on.
        question = Question.parse(text)
        sentences = fitting_sentences(question, [("box", box())], registry)
        assert sentences == ["The uptime is 3600 seconds."], text
        replies = [json.dumps({"skill_name": "box", "arguments": {}})]
        replies.append(json.dumps({"final_answer": sentences[0]}))
        state = Agent(MockModel(replies), registry, grounding=Grounding()).run(text, max_retries=0)
        assert state.final_answer == sentences[0], state.stream.root[-1]


def test_the_machine_asked_what_no_line_holds_gets_no_sentence() -> None:
    # No line is a temperature: no other line of the machine is offered.
    assert said("How hot is the machine?", "garden_pi") == []
    # A door's skill says nothing of the machine.
    assert said("How long has this machine been up?", "hall_door") == []


def test_how_long_a_state_has_held_is_still_said_with_its_time() -> None:
    assert said("How long has the hall door been closed?", "hall_door") == [
        "The hall door has been closed since 08:10."
    ]


@pytest.mark.parametrize(
    ("node", "name", "expected"),
    [
        ("5 d 7 h 13 min", "uptime text", True),
        ("33 min", "text", True),
        (3600, "uptime_s", True),
        (127.2, "uptime hours", True),
        (4, "cores", False),
        ("boot 5 min ago", "text", False),
        ("2026-12-06", "date", False),
        (True, "seconds", False),
    ],
)
def test_a_duration_is_a_time_units_number_or_a_text_of_amounts(
    node: Any, name: str, expected: bool
) -> None:
    assert is_duration(node, name) is expected


# -- a key word glued from two of the question's words ------------------------------------------


def test_the_day_of_the_week_is_the_weekday() -> None:
    question = "What day of the week was 4 July 1976?"
    assert said(question, "date_lookup") == ["The weekday is Sunday."]
    assert grounding_takes(question, "date_lookup", "The weekday is Sunday.")


def test_a_glued_key_is_named_in_either_order() -> None:
    # "time" + "day" glued as the key writes it, "daytime", beside a ``time`` of its own.
    assert said("What is the time of day outside?", "light_meter") == ["The daytime is dusk."]
    # Words that do not glue into a key name it as before.
    assert said("What is the time?", "light_meter") == ["The time is 18:05."]


# -- a number whose label opens with its unit ---------------------------------------------------


def test_a_number_of_a_unit_is_said_as_an_amount_not_as_a_key() -> None:
    question = "How many days ago was 4 July 1976?"
    assert said(question, "date_lookup") == ["It is -18505 days from today."]
    assert grounding_takes(question, "date_lookup", "It is -18505 days from today.")


def test_how_long_a_battery_lasts_is_its_duration_said_as_an_amount() -> None:
    registry = Registry()

    @registry.skill(timeout=1.0)
    def battery_state() -> dict[str, Any]:
        """The battery: its charge, whether it charges, and how long it lasts."""
        return {"percent": 87, "charging": False, "minutes_left": 240}

    question = Question.parse("How long will the battery last?")
    sentences = fitting_sentences(question, [("battery_state", battery_state())], registry)
    assert sentences == ["It is 240 minutes left."]
