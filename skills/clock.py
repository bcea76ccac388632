"""The clock skills: ``now`` and ``resolve_date``.

Small models get dates wrong, and "8/15" has no year or weekday; ``resolve_date`` turns the way
people write dates into a full date, its weekday and how far it is from today.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

MAX_DATE_TEXT = 100
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_RELATIVE_DAYS = {
    "today": 0,
    "now": 0,
    "tonight": 0,
    "tomorrow": 1,
    "yesterday": -1,
    "day after tomorrow": 2,
    "the day after tomorrow": 2,
    "day before yesterday": -2,
    "the day before yesterday": -2,
}
_FIXED_DAYS = {
    "new year": (1, 1),
    "new year day": (1, 1),
    "new years day": (1, 1),
    "valentine day": (2, 14),
    "valentines day": (2, 14),
    "st patrick day": (3, 17),
    "saint patrick day": (3, 17),
    "halloween": (10, 31),
    "christmas eve": (12, 24),
    "christmas": (12, 25),
    "christmas day": (12, 25),
    "boxing day": (12, 26),
    "new year eve": (12, 31),
    "new years eve": (12, 31),
}
"""Days people name that fall on the same date every year ("new year's day" is read with its
"'s" dropped); a movable feast such as Easter is not one."""
_FORMS = (
    "today, tomorrow, yesterday, 'in 3 days', '2 weeks ago', 'friday', 'next friday', "
    "'last friday', '8/15' (month/day), '8/15/2027', '15.8.' (day.month.), '2027-08-15', "
    "'Aug 15', '15 August 2027', Christmas Eve, New Year's Day next year"
)


def _local_now() -> dt.datetime:
    return dt.datetime.now().astimezone()


def _weekday_index(word: str) -> int | None:
    word = word.rstrip(".")
    for i, day in enumerate(WEEKDAYS):
        if len(word) >= 3 and day.startswith(word):
            return i
    return None


def _month_index(word: str) -> int | None:
    word = word.rstrip(".")
    for i, month in enumerate(MONTHS):
        if len(word) >= 3 and month.startswith(word):
            return i + 1
    return None


def _full_year(text: str) -> int:
    year = int(text)
    return year + 2000 if len(text) <= 2 else year


def _nearest(today: dt.date, month: int, day: int) -> dt.date:
    """The date with this month and day closest to today (a tie goes to the future)."""
    if not 1 <= month <= 12:
        raise ValueError(f"there is no month {month}")
    candidates = []
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            candidates.append(dt.date(year, month, day))
        except ValueError:
            continue  # 2/29 outside a leap year
    if not candidates:
        raise ValueError(f"month {month} has no day {day}")
    return min(candidates, key=lambda d: (abs((d - today).days), d < today))


class Clock:
    """Local time, from a clock that tests can replace."""

    def __init__(self, now: Callable[[], dt.datetime] = _local_now) -> None:
        self._now = now

    def now(self) -> dict[str, Any]:
        """The local date, time, weekday and timezone right now."""
        moment = self._now()
        offset = moment.strftime("%z")
        return {
            "date": moment.date().isoformat(),
            "time": moment.strftime("%H:%M:%S"),
            "weekday": WEEKDAYS[moment.weekday()].capitalize(),
            "timezone": moment.tzname() or "local",
            "utc_offset": f"{offset[:3]}:{offset[3:]}" if offset else "+00:00",
        }

    def resolve_date(self, text: str) -> dict[str, Any]:
        """Turn a date like '8/15' (month/day), 'tomorrow' or 'next friday' into YYYY-MM-DD and
        its weekday. A date without a year is the one nearest today."""
        today = self._now().date()
        date = self.parse(text, today)
        # Only the date asked about: today's date beside it is one a reader copies by mistake
        # (days_from_today says how the two relate).
        return {
            "date": date.isoformat(),
            "weekday": WEEKDAYS[date.weekday()].capitalize(),
            "days_from_today": (date - today).days,
        }

    @staticmethod
    def parse(text: str, today: dt.date) -> dt.date:
        """The date ``text`` means, seen from ``today``; ValueError listing the forms if none."""
        if len(text) > MAX_DATE_TEXT:
            raise ValueError(f"a date is at most {MAX_DATE_TEXT} characters")
        words = " ".join(text.lower().replace(",", " ").split())
        try:
            date = _parse_words(words, today) or _find_date(words, today)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"{text.strip()[:40]!r} is not a valid date: {exc}") from None
        if date is None:
            raise ValueError(
                f"cannot read {text.strip()[:40]!r} as a date; write it as one of: {_FORMS}"
            )
        return date


MAX_DATE_WORDS = 5
"""The longest run of words looked for as a date inside a longer text."""


def _find_date(words: str, today: dt.date) -> dt.date | None:
    """The date a run of ``words`` names, the longest run first ("what weekday was 1 january
    2000?" holds "1 january 2000"): a caller, or a model, may pass the whole question."""
    found = [w.strip("?!.;:\"'()").removesuffix("'s") for w in words.split()]
    found = [w for w in found if w]
    for n in range(min(MAX_DATE_WORDS, len(found)), 0, -1):
        for start in range(len(found) - n + 1):
            date = _parse_words(" ".join(found[start : start + n]), today)
            if date is not None:
                return date
    return None


_DAY_WORDS = frozenset(word for name in _FIXED_DAYS for word in name.split())


def _fixed_day(words: str, today: dt.date) -> dt.date | None:
    """A day of the year named by its name ("christmas eve"): the next one from today, or the
    one in the year said after it, a word or two later at most ("this year", "next year", "last
    year", "2027", "falls this year"). In June, "how many days until Christmas?" asks about the
    coming one, not the nearer one past."""
    plain = re.sub(r"['’]s\b", "", words).replace(".", "")
    match = re.fullmatch(r"(.+?)(?: (this|next|last) year| (?:in )?([0-9]{4}))?", plain)
    if match is None:
        return None
    name = match.group(1)
    if (match.group(2) or match.group(3)) and name not in _FIXED_DAYS:
        # A verb or two may stand between the day and its year: "halloween falls this year".
        # Never a word of another day's name: in "halloween before christmas this year" the
        # year is christmas's, found in a shorter run.
        said = name.split()
        heads = [
            " ".join(said[:n])
            for n in range(len(said) - 1, len(said) - 3, -1)
            if n > 0 and not _DAY_WORDS.intersection(said[n:])
        ]
        name = next((head for head in heads if head in _FIXED_DAYS), name)
    if name not in _FIXED_DAYS:
        return None
    month, day = _FIXED_DAYS[name]
    if match.group(3):
        return dt.date(int(match.group(3)), month, day)
    if match.group(2):
        shift = {"this": 0, "next": 1, "last": -1}[match.group(2)]
        return dt.date(today.year + shift, month, day)
    coming = dt.date(today.year, month, day)
    return coming if coming >= today else dt.date(today.year + 1, month, day)


def _parse_words(words: str, today: dt.date) -> dt.date | None:
    if words in _RELATIVE_DAYS:
        return today + dt.timedelta(days=_RELATIVE_DAYS[words])
    fixed = _fixed_day(words, today)
    if fixed is not None:
        return fixed
    match = re.fullmatch(r"in ([0-9]{1,4}) (day|week)s?", words) or re.fullmatch(
        r"([0-9]{1,4}) (day|week)s? (ago|from now|from today)", words
    )
    if match:
        n = int(match.group(1)) * (7 if match.group(2) == "week" else 1)
        return today + dt.timedelta(
            days=-n if match.lastindex == 3 and match.group(3) == "ago" else n
        )
    match = re.fullmatch(r"(next|this|last|on)? ?([a-z]+\.?)", words)
    if match and (weekday := _weekday_index(match.group(2))) is not None:
        ahead = (weekday - today.weekday()) % 7
        if match.group(1) == "next" and ahead == 0:
            ahead = 7
        if match.group(1) == "last":
            ahead = ahead - 7 if ahead else -7
        return today + dt.timedelta(days=ahead)
    match = re.fullmatch(r"([0-9]{4})[-/]([0-9]{1,2})[-/]([0-9]{1,2})", words)
    if match:
        return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    match = re.fullmatch(r"([0-9]{1,2})/([0-9]{1,2})(?:/([0-9]{2}|[0-9]{4}))?", words)
    if match:
        month, day = int(match.group(1)), int(match.group(2))
        if match.group(3):
            return dt.date(_full_year(match.group(3)), month, day)
        return _nearest(today, month, day)
    match = re.fullmatch(r"([0-9]{1,2})\.([0-9]{1,2})\.(?:([0-9]{2}|[0-9]{4}))?", words)
    if match:
        day, month = int(match.group(1)), int(match.group(2))
        if match.group(3):
            return dt.date(_full_year(match.group(3)), month, day)
        return _nearest(today, month, day)
    match = re.fullmatch(
        r"(?:([a-z]+\.?) ([0-9]{1,2})(?:st|nd|rd|th)?"  # Aug 15th
        r"|([0-9]{1,2})(?:st|nd|rd|th)? (?:of )?([a-z]+\.?))"  # 15th of August
        r"(?: ([0-9]{4}))?",
        words,
    )
    if match:
        named = _month_index(match.group(1) or match.group(4))
        if named is None:
            return None
        day = int(match.group(2) or match.group(3))
        if match.group(5):
            return dt.date(int(match.group(5)), named, day)
        return _nearest(today, named, day)
    return None


__all__ = ["MONTHS", "WEEKDAYS", "Clock"]
