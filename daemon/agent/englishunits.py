"""English's units: the symbols a key's last word glues to a name (``_kw`` is kW), the names a
question gives them ("kilowatts"), and their words, which a rendered sentence may hold besides
a result's. Part of :data:`~edge_agentd.agent.english.ENGLISH`."""

from __future__ import annotations

import re

LETTERS = re.compile(r"[^\W\d_]+")

UNIT_SUFFIXES: dict[str, str] = {
    "percent": "%",
    "pct": "%",
    "perc": "%",
    "c": "°C",
    "celsius": "°C",
    "degc": "°C",
    "f": "°F",
    "fahrenheit": "°F",
    "degf": "°F",
    "kelvin": "K",
    "kw": "kW",
    "w": "W",
    "mw": "mW",
    "watts": "W",
    "kwh": "kWh",
    "wh": "Wh",
    "v": "V",
    "mv": "mV",
    "volts": "V",
    "ma": "mA",
    "amps": "A",
    "kib": "KiB",
    "mib": "MiB",
    "gib": "GiB",
    "tib": "TiB",
    "kb": "kB",
    "mb": "MB",
    "gb": "GB",
    "tb": "TB",
    "bytes": "bytes",
    "hz": "Hz",
    "khz": "kHz",
    "mhz": "MHz",
    "ghz": "GHz",
    "rpm": "rpm",
    "hpa": "hPa",
    "kpa": "kPa",
    "pa": "Pa",
    "mbar": "mbar",
    "bar": "bar",
    "psi": "psi",
    "mm": "mm",
    "cm": "cm",
    "km": "km",
    "kmh": "km/h",
    "mph": "mph",
    "ms": "ms",
    "l": "L",
    "ml": "mL",
    "litres": "L",
    "liters": "L",
    "lux": "lx",
    "lx": "lx",
    "db": "dB",
    "dba": "dBA",
    "ppm": "ppm",
    "ppb": "ppb",
    "kg": "kg",
    "s": "seconds",
    "sec": "seconds",
    "secs": "seconds",
    "seconds": "seconds",
    "min": "minutes",
    "mins": "minutes",
    "minutes": "minutes",
    "h": "hours",
    "hr": "hours",
    "hrs": "hours",
    "hours": "hours",
    "days": "days",
}

# The names a question gives units beside their symbols; one letter alone ("s", "l") names
# none there.
UNIT_NAMES: dict[str, str] = {
    **{key: unit for key, unit in UNIT_SUFFIXES.items() if len(key) > 1},
    **{
        name: unit
        for unit, names in {
            "W": "watt watts", "kW": "kilowatt kilowatts", "mW": "milliwatt milliwatts",
            "Wh": "watt-hour watt-hours", "kWh": "kilowatt-hour kilowatt-hours",
            "V": "volt volts", "mV": "millivolt millivolts",
            "A": "amp amps ampere amperes", "mA": "milliamp milliamps",
            "bytes": "byte bytes", "kB": "kilobyte kilobytes", "MB": "megabyte megabytes",
            "GB": "gigabyte gigabytes gigs", "TB": "terabyte terabytes",
            "KiB": "kibibyte kibibytes", "MiB": "mebibyte mebibytes",
            "GiB": "gibibyte gibibytes", "TiB": "tebibyte tebibytes",
            "Hz": "hertz", "kHz": "kilohertz", "MHz": "megahertz", "GHz": "gigahertz",
            "Pa": "pascal pascals", "hPa": "hectopascal hectopascals",
            "kPa": "kilopascal kilopascals", "mbar": "millibar millibars", "bar": "bars",
            "mm": "millimetre millimetres millimeter millimeters",
            "cm": "centimetre centimetres centimeter centimeters",
            "km": "kilometre kilometres kilometer kilometers",
            "ms": "millisecond milliseconds", "seconds": "second seconds",
            "minutes": "minute minutes", "hours": "hour hours", "days": "day days",
            "L": "litre litres liter liters", "mL": "millilitre millilitres milliliter milliliters",
            "gal": "gallon gallons", "kg": "kilogram kilograms kilo kilos", "g": "gram grams",
            "°C": "celsius centigrade", "°F": "fahrenheit", "K": "kelvin",
        }.items()
        for name in names.split()
    },
}  # fmt: skip

UNIT_WORDS = frozenset(
    w.casefold()
    for unit in (*UNIT_SUFFIXES.values(), *UNIT_NAMES.values())
    for w in LETTERS.findall(unit)
)
# And one unit's worth, as an amount before a noun says it ("the 5-minute load average").
UNIT_WORDS |= {w.removesuffix("s") for w in UNIT_WORDS if len(w) > 3 and w.endswith("s")}


__all__ = ["UNIT_NAMES", "UNIT_SUFFIXES", "UNIT_WORDS"]
