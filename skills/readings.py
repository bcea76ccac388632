"""What every sensor family shares: the sensor record, one reading with its unit, and parsing.

All skills report a measurement the same way: ``{"quantity": ..., "value": ..., "unit": ...}``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

CELSIUS = "°C"
FAHRENHEIT = "°F"
PERCENT_RH = "%RH"
HECTOPASCAL = "hPa"
LUX = "lx"

UNITS = {
    "temperature": CELSIUS,
    "humidity": PERCENT_RH,
    "pressure": HECTOPASCAL,
    "illuminance": LUX,
}
"""The unit each quantity is reported in, whatever the sensor's native unit is."""

# Values no real sensor can report; they mean the driver or the wiring is broken.
_LOWEST = {"temperature": -273.15, "humidity": 0.0, "pressure": 0.0, "illuminance": 0.0}
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
MAX_NAME_CHARS = 48


class SensorError(Exception):
    """A sensor could not be found or read; the message is written for the model."""


@dataclasses.dataclass(frozen=True)
class Reading:
    """One measured value in the unit of its quantity."""

    quantity: str
    value: float
    unit: str
    channel: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"quantity": self.quantity, "value": self.value, "unit": self.unit}
        if self.unit == CELSIUS:
            # The other form people ask for, so that no model has to convert (docs/skills.md).
            # Its unit's name lets an answer state it when a question asks "in Fahrenheit".
            out["also"] = {
                "value": round(self.value * 9 / 5 + 32, 2),
                "unit": FAHRENHEIT,
                "unit_name": "Fahrenheit",
            }
        if self.channel is not None:
            out["channel"] = self.channel
        return out


@dataclasses.dataclass(frozen=True)
class Sensor:
    """A sensor found on the device; ``read`` takes a fresh reading of all its quantities."""

    name: str
    kind: str
    label: str
    quantities: tuple[str, ...]
    read: Callable[[], list[Reading]] = dataclasses.field(compare=False, repr=False)
    device_id: str | None = None
    """The id its bus gives it, where people ask for one (a 1-Wire probe's ROM id)."""

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "label": self.label,
            "measures": [{"quantity": q, "unit": UNITS[q]} for q in self.quantities],
        }


def parse_number(text: str, where: str) -> float:
    """A finite number written by a driver, or a :class:`SensorError` naming the file."""
    try:
        value = float(text.strip())
    except ValueError:
        shown = text.strip()[:40]
        raise SensorError(f"{where} holds {shown!r}, which is not a number") from None
    if not math.isfinite(value):
        raise SensorError(f"{where} holds {text.strip()[:40]!r}, which is not a finite number")
    return value


def reading(quantity: str, value: float, where: str, channel: str | None = None) -> Reading:
    """A reading in the quantity's unit, rejected when no working sensor could produce it."""
    if not math.isfinite(value) or value < _LOWEST[quantity]:
        raise SensorError(
            f"{where} gives an impossible {quantity} of {value:g} {UNITS[quantity]}; "
            "the sensor or its driver is faulty"
        )
    return Reading(quantity, round(value, 3), UNITS[quantity], channel)


def clean_name(raw: str, fallback: str) -> str:
    """A short, printable sensor name made from what a driver calls itself."""
    name = _NAME_CHARS.sub("_", raw.strip()).strip("_.-")[:MAX_NAME_CHARS]
    return name or fallback


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort ``thermal_zone10`` after ``thermal_zone2``."""
    parts = re.split(r"([0-9]+)", name)
    # Odd positions are the digit runs; keep (number, text) pairs so the types always compare.
    return tuple((int(p), "") if i % 2 else (-1, p) for i, p in enumerate(parts))


__all__ = [
    "CELSIUS",
    "FAHRENHEIT",
    "HECTOPASCAL",
    "LUX",
    "PERCENT_RH",
    "UNITS",
    "Reading",
    "Sensor",
    "SensorError",
    "clean_name",
    "natural_key",
    "parse_number",
    "reading",
]
