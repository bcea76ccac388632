"""How bench_competence.py scores an answer: strictly, as a person reading it would.

An answer is **correct** when it holds the right value (any of its numbers counts, not only the
first) *and* is not misleading. It is **misleading** when it states a number, a unit, a date, a
weekday or a sensor name that is in neither the skill results the agent saw (its evidence) nor
the question, nor is the right value itself: "41.5 degrees" for a humidity in %RH states a unit
no reading of 41.5 has; "1009.2 m/s" a unit nothing has; "2587.97 seconds" a number nothing has.
A number with a unit must match a value of the evidence *with that unit* (the reading's own, a
key's ``_mib``/``_percent`` suffix, a text such as "5 d 7 h"); a number without one must round
some number of the evidence or the question. Where no skill can answer, the right answer says it
cannot tell, and any value at all is misleading.

The unit words below are the scorer's, a reader's knowledge of how people write units; the agent
under test never sees them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable, Iterator
from typing import Any

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_MONTH = r"((?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)\.?"
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?")

# canonical unit: the ways an answer writes it (longest first when matched)
UNIT_WORDS: dict[str, tuple[str, ...]] = {
    "°C": ("°c", "º c", "°", "degrees celsius", "degree celsius", "celsius", "degrees c",
           "degrees", "degree", "deg c", "c"),
    "°F": ("°f", "degrees fahrenheit", "fahrenheit", "degrees f", "f"),
    "%": ("%rh", "% rh", "%", "percent", "per cent", "percentage"),
    "hPa": ("hpa", "hectopascals", "hectopascal", "mbar", "millibars", "millibar"),
    "kPa": ("kpa", "kilopascals", "kilopascal"),
    "Pa": ("pa", "pascals", "pascal"),
    "MiB": ("mib", "mb", "megabytes", "megabyte", "mebibytes"),
    "GiB": ("gib", "gb", "gigabytes", "gigabyte", "gibibytes"),
    "KiB": ("kib", "kb", "kilobytes"),
    "s": ("seconds", "second", "secs", "sec", "s"),
    "ms": ("milliseconds", "millisecond", "ms"),
    "min": ("minutes", "minute", "mins", "min"),
    "h": ("hours", "hour", "hrs", "hr", "h"),
    "d": ("days", "day", "d"),
    "week": ("weeks", "week"),
    "lx": ("lux", "lx"),
    "m/s": ("m/s", "meters per second", "metres per second"),
    "km/h": ("km/h", "kph", "kilometers per hour", "kilometres per hour"),
    "mm": ("mm", "millimeters", "millimetres"),
    "V": ("volts", "volt", "v"),
    "W": ("watts", "watt", "w"),
    # bench_grounding.py's plugin home
    "kW": ("kw", "kilowatts", "kilowatt"),
    "kWh": ("kwh", "kilowatt-hours", "kilowatt-hour", "kilowatt hours", "kilowatt hour"),
    "Wh": ("wh", "watt-hours", "watt-hour", "watt hours", "watt hour"),
    "L": ("litres", "liters", "litre", "liter", "l"),
    "gal": ("gallons", "gallon", "gal"),
    "ppm": ("ppm", "parts per million"),
}  # fmt: skip
_UNIT_OF = {word: unit for unit, words in UNIT_WORDS.items() for word in words}
_UNIT_ALTERNATIVES = "|".join(re.escape(w) for w in sorted(_UNIT_OF, key=len, reverse=True))
_UNIT_AFTER = re.compile(rf"\s*({_UNIT_ALTERNATIVES})(?![a-z])")
_SUFFIX_UNITS = {"mib": "MiB", "gib": "GiB", "kib": "KiB", "percent": "%", "seconds": "s",
                 "s": "s", "hours": "h", "days": "d", "min": "min", "c": "°C",
                 "f": "°F"}  # fmt: skip
_CANNOT = re.compile(
    r"can't|cannot|can not|unable|don't know|do not know|not available|unavailable|no skill|"
    r"not sure|don't have|do not have|doesn't have|does not have|no sensor|not found|unknown|"
    r"no way|isn't available|is not available|no data|not possible|couldn't|could not|no .{0,20}"
    r"(?:sensor|skill|information|data|reading)",
)
_ORDINAL = re.compile(r"\d+[a-z]{1,3}")  # 24th, 5d, 10min: not names
_TIME = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?![\d:])")
"""A time of day: one value, not the numbers it is written with ("10:10:10" from "10 days")."""
_PATH = re.compile(r"(?<![^\s'\"(])/[^\s'\",;]+")
_NAME = re.compile(r"\b(?=[a-z0-9_-]*[a-z])(?=[a-z0-9_-]*\d)[a-z0-9][a-z0-9_-]{2,}\b")


def numbers(text: str) -> list[tuple[float, int, int, int]]:
    """Each number in ``text``: value, decimals, start and end; 2,873.2 is one number."""
    found = []
    for match in _NUMBER.finditer(text):
        token = match.group().replace(",", "")
        found.append((float(token), len(token.partition(".")[2]), match.start(), match.end()))
    return found


def rounds_to(number: float, decimals: int, value: float, tolerance: float = 0.0) -> bool:
    """Whether ``number``, written with ``decimals``, is ``value`` as the answer rounds it."""
    return abs(number - value) <= 0.5 * 10**-decimals + tolerance + 1e-9


def canonical_unit(word: str) -> str | None:
    return _UNIT_OF.get(word.strip().lower())


def month(word: str) -> int:
    """1 to 12 for a month's name or its abbreviation; 0 for other words ("mark", "decimal")."""
    return next((i + 1 for i, name in enumerate(MONTHS) if name.startswith(word)), 0)


def dates(text: str) -> Iterator[tuple[int | None, int, int, int, int]]:
    """(year or None, month, day, start, end) for each date written in ``text``."""
    low = text.lower()
    patterns: list[tuple[str, str]] = [
        (r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", "ymd"),
        (rf"\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? (\d{{4}}))?", "Mdy"),
        (rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? {_MONTH}(?:,? (\d{{4}}))?", "dMy"),
        (r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b", "mdy"),
        (r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b", "dmy"),
    ]
    for pattern, order in patterns:
        for match in re.finditer(pattern, low):
            parts = dict(zip(order, match.groups(), strict=True))
            m = month(parts["M"]) if "M" in parts else int(parts["m"])
            if m == 0:
                continue
            y = parts["y"]
            yield (int(y) if y else None), m, int(parts["d"]), match.start(), match.end()


def weekdays_named(text: str) -> set[int]:
    """The weekdays a text names, in full or abbreviated ("Sat"), but not "month" or "sunny"."""
    words = re.findall(r"[a-z]+", text.lower())
    return {i for i, day in enumerate(WEEKDAYS) for w in words if len(w) >= 3 and day.startswith(w)}


def says_cannot_tell(answer: str) -> bool:
    return bool(_CANNOT.search(answer.lower().replace("’", "'")))


# -- the evidence ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Evidence:
    """What the agent saw: the numbers (with the unit each has, if any), dates, names and words."""

    values: list[tuple[float, str | None]] = dataclasses.field(default_factory=list)
    dates: set[tuple[int, int, int]] = dataclasses.field(default_factory=set)
    month_days: set[tuple[int, int]] = dataclasses.field(default_factory=set)
    text: str = ""
    question_values: list[float] = dataclasses.field(default_factory=list)

    def add_text(self, text: str, unit: str | None = None) -> None:
        self.text += " " + text.lower()
        for y, m, d, _, _ in dates(text):
            if y is not None:
                self.dates.add((y, m, d))
            self.month_days.add((m, d))
        for value, _, _, end in numbers(text):
            after = _UNIT_AFTER.match(text[end:].lower())
            self.values.append((value, canonical_unit(after.group(1)) if after else unit))
            self.values.append((value, None))

    def add_value(self, value: float, unit: str | None) -> None:
        self.values.append((float(value), unit))
        self.values.append((float(value), None))

    def add_date(self, date: dt.date) -> None:
        self.dates.add((date.year, date.month, date.day))
        self.month_days.add((date.month, date.day))


def _key_unit(key: str) -> str | None:
    """The unit a result key names by one of its parts: ``available_mib`` holds MiB,
    ``days_from_today`` days, ``seconds`` s."""
    parts = key.lower().split("_")
    if len(parts) == 1 and parts[0] not in ("seconds", "hours", "days"):
        return None
    return next((_SUFFIX_UNITS[p] for p in reversed(parts) if p in _SUFFIX_UNITS), None)


def gather(results: Iterable[Any], question: str) -> Evidence:
    """The evidence in skill results and the question."""
    evidence = Evidence(question_values=[v for v, _, _, _ in numbers(question)])
    evidence.add_text(question)

    def walk(node: Any, key: str | None) -> None:
        if isinstance(node, dict):
            unit = node.get("unit") if isinstance(node.get("unit"), str) else None
            for k, v in node.items():
                evidence.add_text(str(k))
                if k == "value" and isinstance(v, int | float) and not isinstance(v, bool):
                    evidence.add_value(v, canonical_unit(unit) if unit else None)
                else:
                    walk(v, str(k))
        elif isinstance(node, list):
            if len(node) >= 2:
                # How many items a list holds is in the result: "3 sensors" is not made up.
                evidence.add_value(len(node), None)
            for item in node:
                walk(item, key)
        elif isinstance(node, bool) or node is None:
            return
        elif isinstance(node, int | float):
            evidence.add_value(node, _key_unit(key) if key else None)
        else:
            evidence.add_text(str(node))

    for result in results:
        walk(result, None)
    return evidence


# -- judging one answer ---------------------------------------------------------------------------


@dataclasses.dataclass
class Expected:
    """The right values, which are never misleading themselves (a difference, a conversion)."""

    values: list[tuple[float, str | None]] = dataclasses.field(default_factory=list)
    dates: list[dt.date] = dataclasses.field(default_factory=list)
    weekdays: set[int] = dataclasses.field(default_factory=set)
    any_value_misleads: bool = False
    """No skill can answer: any number, unit or date stated is misleading."""


_AMOUNT = re.compile(r"(\d+(?:\.\d+)?)[ -]?([a-z]+)")


def _amount_held(name: str, text: str) -> bool:
    """Whether ``name``, an amount as a person writes it before a noun ("5-minute"), is one
    ``text`` holds however it writes it ("5min" of a key, "5 minutes")."""
    said = _AMOUNT.fullmatch(name)
    unit = canonical_unit(said.group(2)) if said else None
    if said is None or unit is None:
        return False
    return any(
        float(found.group(1)) == float(said.group(1)) and canonical_unit(found.group(2)) == unit
        for found in _AMOUNT.finditer(text.lower())
    )


def misleading(answer: str, evidence: Evidence, expected: Expected) -> list[str]:
    """What the answer states that neither the evidence nor the question holds (empty: nothing)."""
    low = answer.lower().replace("\u202f", " ").replace("\xa0", " ")
    found: list[str] = []
    spans: list[tuple[int, int]] = []
    known_dates = set(evidence.dates) | {(d.year, d.month, d.day) for d in expected.dates}
    known_md = set(evidence.month_days) | {(d.month, d.day) for d in expected.dates}
    # A file's path in a skill's error said as the reason ("... under /tmp/x-1a2b/sys") states
    # no value: its digits are the device's directory's.
    spans += [m.span() for m in _PATH.finditer(low)]
    for y, m, d, start, end in dates(low):
        spans.append((start, end))
        known = (m, d) in known_md if y is None else (y, m, d) in known_dates
        if expected.any_value_misleads or not known:
            found.append(f"date {low[start:end]!r}")
    for match in _TIME.finditer(low):
        spans.append(match.span())
        if expected.any_value_misleads or match.group() not in evidence.text:
            found.append(f"time {match.group()!r}")
    for value, decimals, start, end in numbers(low):
        if any(s <= start < e for s, e in spans):
            continue
        after = _UNIT_AFTER.match(low[end:])
        unit = canonical_unit(after.group(1)) if after else None
        shown = low[start : end + (after.end() if after else 0)].strip()
        if expected.any_value_misleads:
            if not any(rounds_to(value, decimals, v) for v in evidence.question_values):
                found.append(f"value {shown!r}")
            continue
        pool = evidence.values + expected.values + [(v, None) for v, _ in expected.values]
        if unit is None:
            ok = any(rounds_to(value, decimals, v) for v, _ in pool)
        else:
            ok = any(u == unit and rounds_to(value, decimals, v) for v, u in pool)
        if not ok:
            found.append(f"{'value' if unit is None else 'value and unit'} {shown!r}")
    for match in _NAME.finditer(low):
        name = match.group()
        if any(s <= match.start() < e for s, e in spans):
            continue
        held = name in evidence.text or _amount_held(name, evidence.text)
        if not held and not _ORDINAL.fullmatch(name):
            found.append(f"name {name!r}")
    if weekdays_named(low) - weekdays_named(evidence.text) - expected.weekdays:
        found.append("a weekday nothing gave")
    return found


__all__ = [
    "MONTHS",
    "UNIT_WORDS",
    "WEEKDAYS",
    "Evidence",
    "Expected",
    "canonical_unit",
    "dates",
    "gather",
    "misleading",
    "month",
    "numbers",
    "rounds_to",
    "says_cannot_tell",
    "weekdays_named",
]
