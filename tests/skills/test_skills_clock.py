"""now() and resolve_date(), on a fixed clock."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd.agent.registry import Registry
from edge_agentd.skills import register_builtins
from edge_agentd.skills.clock import Clock

TAIPEI = dt.timezone(dt.timedelta(hours=8), "CST")
# Wednesday 2 December 2026, 21:05:09 in Taipei.
MOMENT = dt.datetime(2026, 12, 2, 21, 5, 9, tzinfo=TAIPEI)


@pytest.fixture
def clock() -> Clock:
    return Clock(lambda: MOMENT)


def test_now(clock: Clock) -> None:
    assert clock.now() == {
        "date": "2026-12-02",
        "time": "21:05:09",
        "weekday": "Wednesday",
        "timezone": "CST",
        "utc_offset": "+08:00",
    }


def test_now_on_the_real_clock() -> None:
    result = Clock().now()
    assert dt.date.fromisoformat(result["date"]).strftime("%A") == result["weekday"]
    assert result["utc_offset"][0] in "+-"


@pytest.mark.parametrize(
    ("text", "date"),
    [
        ("today", "2026-12-02"),
        ("Tomorrow", "2026-12-03"),
        ("yesterday", "2026-12-01"),
        ("the day after tomorrow", "2026-12-04"),
        ("in 3 days", "2026-12-05"),
        ("2 weeks ago", "2026-11-18"),
        ("1 week from now", "2026-12-09"),
        ("friday", "2026-12-04"),
        ("Fri.", "2026-12-04"),
        ("wednesday", "2026-12-02"),
        ("next wednesday", "2026-12-09"),
        ("this saturday", "2026-12-05"),
        ("last monday", "2026-11-30"),
        ("last wednesday", "2026-11-25"),
        ("on sunday", "2026-12-06"),
        ("12/25", "2026-12-25"),  # month/day, as in "the weather on 8/15"
        ("1/3", "2027-01-03"),  # a month away forward, eleven back: the nearer one
        ("8/15", "2026-08-15"),  # 109 days back is nearer than 256 ahead
        ("8/15/2027", "2027-08-15"),
        ("8/15/27", "2027-08-15"),
        ("24.12.", "2026-12-24"),  # day.month.
        ("24.12.2030", "2030-12-24"),
        ("2027-08-15", "2027-08-15"),
        ("2027/8/5", "2027-08-05"),
        ("Aug 15", "2026-08-15"),
        ("august 15th 2027", "2027-08-15"),
        ("15 August", "2026-08-15"),
        ("1st of March, 2028", "2028-03-01"),
        ("  Dec   31  ", "2026-12-31"),
        ("2 weeks from today", "2026-12-16"),
        # A day of the year named by its name: nearest today, or in the year said after it.
        ("Christmas Eve", "2026-12-24"),
        ("New Year's Day", "2027-01-01"),
        ("new year’s day this year", "2026-01-01"),
        ("Halloween last year", "2025-10-31"),
        ("christmas 2030", "2030-12-25"),
        ("What day of the week is Christmas Eve this year?", "2026-12-24"),
        ("What weekday is New Year's Day next year?", "2027-01-01"),
        # A verb or two between the day and its year, and never a shorter day's name.
        ("On what day of the week does Halloween fall this year?", "2026-10-31"),
        ("christmas eve falls on next year", "2027-12-24"),
        ("Christmas Eve this year", "2026-12-24"),
        ("Is halloween before christmas this year?", "2026-12-25"),
        # A sentence holding a date: its longest run of words that names one.
        ("What weekday was 1 January 2000?", "2000-01-01"),
        ("what will the date be in 30 days", "2027-01-01"),
        ("What is today's date?", "2026-12-02"),
    ],
)
def test_resolve_date(clock: Clock, text: str, date: str) -> None:
    result = clock.resolve_date(text)
    resolved = dt.date.fromisoformat(date)
    assert result == {
        "date": date,
        "weekday": resolved.strftime("%A"),
        "days_from_today": (resolved - MOMENT.date()).days,
    }


def test_a_named_day_without_a_year_is_the_coming_one() -> None:
    june = Clock(lambda: dt.datetime(2026, 6, 20, tzinfo=dt.UTC))
    assert june.resolve_date("How many days until Christmas?")["date"] == "2026-12-25"
    assert june.resolve_date("halloween")["date"] == "2026-10-31"
    assert june.resolve_date("new year's day")["date"] == "2027-01-01"
    assert june.resolve_date("Halloween last year")["date"] == "2025-10-31"


def test_february_29_picks_a_leap_year() -> None:
    clock = Clock(lambda: dt.datetime(2027, 6, 1, tzinfo=dt.UTC))
    assert clock.resolve_date("2/29")["date"] == "2028-02-29"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("someday", "cannot read 'someday' as a date; write it as one of: today"),
        ("13/45", "'13/45' is not a valid date: there is no month 13"),
        ("2/30", "month 2 has no day 30"),
        ("2027-02-29", "day is out of range"),
        ("Smarch 3", "cannot read"),
        ("x" * 101, "at most 100 characters"),
    ],
)
def test_unreadable_dates_say_what_is_accepted(clock: Clock, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        clock.resolve_date(text)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=120) | st.from_regex(r"[0-9]{1,5}[/.\-][0-9]{1,5}[/.\-]?[0-9]{0,5}"))
def test_any_text_gives_a_date_or_a_value_error(text: str) -> None:
    clock = Clock(lambda: MOMENT)
    try:
        result = clock.resolve_date(text)
    except ValueError as exc:
        assert str(exc)
        return
    date = dt.date.fromisoformat(result["date"])
    assert result["weekday"] == date.strftime("%A")


def test_resolve_date_is_registered_as_a_skill_that_reads_whole_questions(tmp_path: Path) -> None:
    registry = Registry()
    register_builtins(registry, sysfs_root=tmp_path)
    readers = [spec.name for spec in registry if spec.reads_sentences]
    assert readers == ["resolve_date"]
    # What that promises: the date inside a question, read the way the question means it.
    today = dt.date(2026, 12, 4)
    for question, date in (
        ("What date will it be the day after tomorrow?", dt.date(2026, 12, 6)),
        ("What weekday was 1 January 2000?", dt.date(2000, 1, 1)),
        ("What date is it 2 weeks from today?", dt.date(2026, 12, 18)),
        ("What day of the week is Christmas Eve this year?", dt.date(2026, 12, 24)),
    ):
        assert Clock.parse(question, today) == date
