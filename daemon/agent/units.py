"""Units of measure: which measure each is of and how it converts, so the engine can say a
value in the unit a question asks for ("How much power is the house using, in kilowatts?" of
``power_w: 1840``: "1.84 kW").

A unit is known by its symbol as the language writes it after a value
(:attr:`~edge_agentd.agent.language.Language.unit_suffixes`, case folded); which words of a
question name one is the language's (:attr:`~edge_agentd.agent.language.Language.unit_names`).
The table holds physics, not words: it is the same in every language.

A converted value is the engine's arithmetic on a value a skill returned, and grounding holds it
as the skill's own: :func:`conversions` gives the texts a run's evidence gains.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from edge_agentd.agent.amounts import number_and_unit

if TYPE_CHECKING:
    from edge_agentd.agent.language import Language


@dataclasses.dataclass(frozen=True)
class Measure:
    """How a unit converts: ``base = value * scale + offset`` in its measure's base unit."""

    measure: str
    scale: float
    offset: float = 0.0


_POWERS = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_BINARY = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}

UNITS: dict[str, Measure] = {
    "w": Measure("power", 1), "kw": Measure("power", 1e3), "mw": Measure("power", 1e-3),
    "wh": Measure("energy", 1), "kwh": Measure("energy", 1e3),
    "v": Measure("voltage", 1), "mv": Measure("voltage", 1e-3),
    "a": Measure("current", 1), "ma": Measure("current", 1e-3),
    "bytes": Measure("data", 1),
    **{f"{p}b": Measure("data", s) for p, s in _POWERS.items()},
    **{f"{p}b": Measure("data", s) for p, s in _BINARY.items()},
    "hz": Measure("frequency", 1), "khz": Measure("frequency", 1e3),
    "mhz": Measure("frequency", 1e6), "ghz": Measure("frequency", 1e9),
    "pa": Measure("pressure", 1), "hpa": Measure("pressure", 100), "kpa": Measure("pressure", 1e3),
    "mbar": Measure("pressure", 100), "bar": Measure("pressure", 1e5),
    "psi": Measure("pressure", 6894.757293168),
    "mm": Measure("length", 1e-3), "cm": Measure("length", 1e-2), "km": Measure("length", 1e3),
    "km/h": Measure("speed", 1 / 3.6), "mph": Measure("speed", 0.44704),
    "ms": Measure("time", 1e-3), "seconds": Measure("time", 1), "minutes": Measure("time", 60),
    "hours": Measure("time", 3600), "days": Measure("time", 86400),
    "l": Measure("volume", 1), "ml": Measure("volume", 1e-3), "gal": Measure("volume", 3.785411784),
    "kg": Measure("mass", 1), "g": Measure("mass", 1e-3),
    "°c": Measure("temperature", 1), "°f": Measure("temperature", 5 / 9, -160 / 9),
    "k": Measure("temperature", 1, -273.15),
}  # fmt: skip
"""Each unit's measure, by its symbol case folded (``mw`` is the milliwatt, as the language's
key suffixes have it; ``mb`` the megabyte, and ``mbar`` the millibar)."""

SIGNIFICANT = 4
"""How many significant digits a converted value is said with (never fewer than its whole
part's): the source's precision is rarely more, and a person rounds."""


def convert(value: float, unit: str, to: str) -> float | None:
    """``value`` in ``unit`` said in ``to`` (symbols, any case), or None when either is unknown
    or they measure different things."""
    source, target = UNITS.get(unit.casefold()), UNITS.get(to.casefold())
    if source is None or target is None or source.measure != target.measure:
        return None
    converted = (value * source.scale + source.offset - target.offset) / target.scale
    return converted if math.isfinite(converted) else None


def said_number(value: float) -> str:
    """``value`` as the engine writes a converted one: :data:`SIGNIFICANT` digits, no trailing
    zeros, and no exponent."""
    if value == 0 or not math.isfinite(value):
        return "0"
    whole_digits = math.floor(math.log10(abs(value))) + 1
    decimals = max(0, SIGNIFICANT - whole_digits)
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def asked_units(question: str, language: Language) -> tuple[str, ...]:
    """The symbols of the units ``question`` asks its value in, as ``language`` writes them:
    a unit named after a place word ("in kilowatts", "in degrees Fahrenheit") or right after
    "how many" ("How many gallons of water ..."). Empty when it names none so."""
    low = [w.casefold() for w in language.token.findall(question)]
    found: dict[str, None] = {}
    for index, word in enumerate(low):
        named = language.unit_names.get(word)
        if named is None:
            continue
        before = low[index - 1] if index else ""
        # "in degrees Fahrenheit": a unit's generic word may stand between.
        if before in language.unit_generic and index > 1:
            before = low[index - 2]
        if before in language.place or before in language.how_many:
            found.setdefault(named, None)
    return tuple(found)


def conversions(
    readings: Iterable[tuple[str, float]], units: Sequence[str]
) -> list[tuple[str, float, str]]:
    """Each of ``readings`` (a unit name case folded and a value, as
    :func:`~edge_agentd.agent.claims.reading_units` gives them) said in each of ``units`` it
    converts to: ``(unit, value, text)``, the text as a sentence writes it (``2.482 GB``)."""
    said: list[tuple[str, float, str]] = []
    for (unit, value), to in itertools.product(readings, units):
        if unit == to.casefold():
            continue
        converted = convert(value, unit, to)
        if converted is not None:
            text = said_number(converted)
            said.append((to.casefold(), float(text), f"{text} {to}"))
    return said


def said_in(value: str, units: Sequence[str]) -> str:
    """``value``, a number and its unit as a sentence writes them (``2367.0 MiB``), said in
    the first of ``units`` it converts to (``2.482 GB``); as it is when it is in none of them
    or converts to none."""
    found = number_and_unit(value.strip(), None)
    if found is None or not units:
        return value
    number, unit = found
    if any(unit.casefold() == to.casefold() for to in units):
        return value
    for to in units:
        converted = convert(float(number), unit, to)
        if converted is not None:
            return f"{said_number(converted)} {to}"
    return value


def converts(unit: str, units: Iterable[str]) -> bool:
    """Whether a value in ``unit`` can be said in one of ``units``."""
    return any(convert(1.0, unit, to) is not None for to in units)


__all__ = [
    "UNITS",
    "Measure",
    "asked_units",
    "conversions",
    "convert",
    "converts",
    "said_in",
    "said_number",
]
