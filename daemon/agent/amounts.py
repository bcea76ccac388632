"""An amount, a number and the unit after it, however it is written (docs/design.md, "Bound
to the question"): a key glues it into one word (``5min`` of a load average, ``24h``,
``2ghz``), a question writes it "5 minutes", "5-minute", "5 minute", "5 min" or "5min", an
answer "the 5-minute load average". Each is the same amount, ``(5.0, "minutes")``, its unit
as the language writes it after a value (:attr:`~edge_agentd.agent.language.Language.
unit_suffixes`). A key's amount says which one of its siblings it is; only the question's
same amount names it, never another number.

Also what a duration is: a number in a time unit, or a text of amounts with one in a time
unit ("5 d 7 h 13 min"). Every word is the language's; nothing here knows a skill.

:func:`number_and_unit` is the one reader of a number and the unit after it, here and for the
conversions of :mod:`~edge_agentd.agent.units`.
"""

from __future__ import annotations

import re
from typing import Any

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.language import Language

Amount = tuple[float, str]
"""A number and its unit as the language writes it after a value (``(5.0, "minutes")``)."""


WRITTEN_VALUE = re.compile(r"(-?\d+(?:\.\d+)?) ?(\S+)")
"""A value as the engine writes one it renders: a number, signed, and its unit's symbol after at
most one space, whatever its letters (``2367.0 MiB``, ``-3.5 °C``, ``12 km/h``, ``45.8 %``)."""


def number_and_unit(text: str, language: Language | None = ENGLISH) -> tuple[str, str] | None:
    """``text`` read whole as a number and the unit after it, both as written: as ``language``
    writes an amount ("5 minutes", "5-minute", "5min"; none where it reads no amount), or with
    no language, as the engine writes a value it renders (:data:`WRITTEN_VALUE`)."""
    pattern = WRITTEN_VALUE if language is None else language.amount
    match = pattern.fullmatch(text) if pattern is not None else None
    return None if match is None else (match.group(1), match.group(2))


def unit_named(word: str, language: Language = ENGLISH) -> str | None:
    """The unit ``word`` names ("min", "minute", "minutes" all name "minutes"), as the language
    writes it after a value; None when it names none."""
    units = language.unit_suffixes
    for form in sorted(language.forms(word)):
        if form in units:
            return units[form]
    return None


def amounts_in(text: str, language: Language = ENGLISH) -> list[Amount]:
    """Every amount ``text`` writes, however it is written ("5 minutes", "5-minute", "5min");
    none where the language reads no amount. A key's ``_`` parts it as a space does."""
    pattern = language.amount
    if pattern is None:
        return []
    found = []
    for match in pattern.finditer(text.replace("_", " ")):
        unit = unit_named(match.group(2), language)
        if unit is not None:
            found.append((float(match.group(1)), unit))
    return found


def _whole(word: str, language: Language) -> tuple[str, str] | None:
    """The number, as written, and the unit of the amount ``word`` is whole, or None."""
    found = number_and_unit(word, language)
    unit = unit_named(found[1], language) if found is not None else None
    if found is None or unit is None:
        return None
    # One letter is a unit only of time ("24h", "10s"): "1c" or "2v" is as likely a name.
    if len(found[1]) == 1 and unit not in language.time_units:
        return None
    return found[0], unit


def amount_of(word: str, language: Language = ENGLISH) -> Amount | None:
    """The amount one word is, whole ("5min", "5-minute", "24h"); None for any other word."""
    found = _whole(word, language)
    return (float(found[0]), found[1]) if found is not None else None


def key_amounts(name: str, language: Language = ENGLISH) -> set[Amount]:
    """The amounts a line's name glues into one of its words (``load_average 5min``): the
    question's same amount names that line."""
    return {a for word in language.name_word.findall(name) if (a := amount_of(word, language))}


def said_amount(word: str, language: Language = ENGLISH) -> str | None:
    """A key's amount as a person says it before a noun ("5-minute" of ``5min``, "2 GHz" of
    ``2ghz``), its number as the key writes it; None for a word that is no amount."""
    found = _whole(word, language)
    if found is None:
        return None
    number, unit = found
    suffix = language.plural_suffix
    if unit.isalpha() and unit.islower() and suffix and unit.endswith(suffix):
        # A unit said in words is one unit's worth before a noun: "5-minute".
        return language.said_amount_word.format(number=number, unit=unit.removesuffix(suffix))
    return language.said_amount_sign.format(number=number, unit=unit)


def is_duration(node: Any, name: str, language: Language = ENGLISH) -> bool:
    """Whether a line named ``name`` showing ``node`` holds a duration: a number whose key is
    a time unit, ends or opens with one (``seconds``, ``uptime_s``, ``minutes_left``), or a
    text of amounts, one of them in a time unit ("5 d 7 h 13 min")."""
    times = language.time_units
    if isinstance(node, bool) or not times:
        return False
    if isinstance(node, int | float):
        # Its key ends with the unit (``uptime_s``) or opens with it (``minutes_left``).
        key = name.rsplit(maxsplit=1)[-1] if name.split() else ""
        words = language.name_word.findall(key.casefold())
        return any(unit_named(w, language) in times for w in words[:1] + words[-1:])
    if not isinstance(node, str) or language.amount is None:
        return False
    found = list(language.amount.finditer(node))
    # Nothing but amounts: "5 d 7 h 13 min", "33 min"; not "boot at 5 min past".
    rest = language.amount.sub(" ", node)
    return (
        bool(found)
        and not language.alnum.search(rest)
        and any(unit_named(m.group(2), language) in times for m in found)
    )


__all__ = [
    "WRITTEN_VALUE",
    "Amount",
    "amount_of",
    "amounts_in",
    "is_duration",
    "key_amounts",
    "number_and_unit",
    "said_amount",
    "unit_named",
]
