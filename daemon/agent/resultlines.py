"""Results a small model can read (docs/design.md, "Small models"): each skill result as short
``name: value unit`` lines.

A result is shown as lines instead of nested JSON (``temperature: 22.7 °C``,
``memory available_mib: 2367.0``); a reading, any object with a numeric ``value`` and a string
``unit``, is one line with its unit; a list says how many items it holds, and their names when
each has one. The event keeps the whole result.

A model that drives the loop reads a result as fields instead (:func:`result_fields`): each key
of the result once, on its own line, what it holds written on it without JSON's quotes and
blanks, and a reading as its value and unit. Nothing is left out, and the names a call copies
stay whole.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.jsonvalues import compact_json, walk
from edge_agentd.agent.language import Language

MAX_LINES = 48
"""A result with more lines than this is cut (the event keeps it whole)."""
MAX_LINE_CHARS = 160

DIGIT = re.compile(r"[0-9]")
MIN_WORD, MAX_WORD = 2, 24
"""The lengths of a word a unit's name or a key gives: a letter alone ("C") is in any
question, and a run longer than a word is none."""


def name_words(name: str, language: Language = ENGLISH) -> list[str]:
    """The words of a name, each whole (``available_mib`` gives "available" and "mib"; the
    "min" of ``1min`` is none: a word is a part between what is no letter or digit)."""
    return [
        part
        for part in re.split(r"[\W_]+", name)
        if MIN_WORD <= len(part) <= MAX_WORD and language.letters.fullmatch(part)
    ]


def scalar_text(value: Any) -> str:
    """A scalar as a result line shows it (JSON's spelling for numbers, strings bare)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def reading_text(node: dict[str, Any]) -> str | None:
    """``22.7 °C`` for an object with a numeric ``value`` and a string ``unit``; else None."""
    value, unit = node.get("value"), node.get("unit")
    if is_number(value) and isinstance(unit, str) and unit.strip():
        return f"{scalar_text(value)} {unit.strip()}"
    return None


def item_label(item: Any, path: str, index: int) -> str:
    """A list item's name in its lines: its first short string field (a reading's quantity, a
    sensor's name), else its place in the list."""
    if isinstance(item, dict):
        for value in item.values():
            if isinstance(value, str) and 0 < len(value) <= 40 and not DIGIT.fullmatch(value):
                return f"{path} {value}".strip()
    return f"{path}[{index}]"


def alternative_forms(reading: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The other forms a reading carries of itself (``"also": {"value": 118.96, "unit": "°F",
    "unit_name": "Fahrenheit"}``): readings nested in a reading."""
    return {
        str(key): form
        for key, form in reading.items()
        if isinstance(form, dict) and reading_text(form) is not None
    }


def names_unit(form: dict[str, Any], question: str, language: Language = ENGLISH) -> bool:
    """Whether ``question`` asks for a reading's form by its unit (``°F``) or its unit's name
    (``Fahrenheit``), as the result writes them."""
    folded = question.casefold()
    unit = str(form.get("unit", "")).strip().casefold()
    name = form.get("unit_name")
    words = name_words(name, language) if isinstance(name, str) else []
    return (bool(unit) and unit in folded) or any(w.casefold() in folded for w in words)


def counted(items: list[Any], in_item: bool) -> bool:
    """Whether a list's length is shown and may be copied: a list of two or more, at the top or
    in an object, not inside another list's items (a sensor's one quantity is no count anyone
    asks for, and a small model copied such a "1" as the answer to anything)."""
    return len(items) >= 2 and not in_item


def count_text(items: list[Any], language: Language = ENGLISH) -> str:
    """``3 in all``, and their names when each item is an object with one, not a reading
    (``3 in all: cpu, bme280, w1``): "which sensors are there?" is answered by the names, and
    a name shown only inside other lines' names is one a small model does not copy."""
    names = [item_label(item, "", index) for index, item in enumerate(items)]
    counted = f"{len(items)} {language.in_all}"
    if any(name.startswith("[") for name in names) or any(reading_text(i) for i in items):
        return counted  # unnamed, or readings: each one's line names it
    return f"{counted}: {', '.join(names)}"


@dataclasses.dataclass(frozen=True)
class Line:
    """One ``name: value unit`` line of a result, with the part of the result it shows."""

    name: str
    """What comes before the colon (``memory available_mib``, ``readings humidity``)."""
    shown: str
    """What comes after it (``2367.0``, ``41.5 %RH``, ``3 in all``)."""
    node: Any
    """The part of the result the line shows: a scalar, a reading, or a whole list."""
    alternative: bool = False
    """The line shows another form of a reading (see :func:`alternative_forms`)."""

    @property
    def text(self) -> str:
        return f"{self.name}: {self.shown}"


def result_line_parts(result: Any, language: Language = ENGLISH) -> list[Line]:
    """The lines of a skill result (see the module's docstring), each with its part."""
    lines: list[Line] = []

    def visit(node: Any, at: tuple[str, bool]) -> list[tuple[Any, tuple[str, bool]]]:
        path, in_item = at
        if isinstance(node, dict):
            reading = reading_text(node)
            if reading is None:
                return [(item, (f"{path} {key}".strip(), in_item)) for key, item in node.items()]
            forms = alternative_forms(node)
            kept = {"value": node["value"], "unit": node["unit"], **forms}
            lines.append(Line(path or "value", reading, kept))
            for key, form in forms.items():
                name = f"{path} {key}".strip()
                lines.append(Line(name, str(reading_text(form)), form, alternative=True))
            rest = {k: v for k, v in node.items() if k not in ("value", "unit", *forms)}
            return [
                (item, (f"{path} {key}".strip(), in_item))
                for key, item in rest.items()
                if not isinstance(item, str) or f"{path}".endswith(item)
            ]
        if isinstance(node, list):
            if counted(node, in_item):
                lines.append(Line(path or "items", count_text(node, language), node))
            items = []
            for index, item in enumerate(node):
                label = item_label(item, path, index)
                if isinstance(item, dict):
                    named = {k: v for k, v in item.items() if f"{path} {v}".strip() != label}
                    items.append((named, (label, True)))
                else:
                    items.append((item, (label, True)))
            return items
        lines.append(Line(path or "value", scalar_text(node), node))
        return []

    walk(result, visit, ("", False))
    return lines


def result_lines(result: Any, language: Language = ENGLISH) -> list[str]:
    """``name: value unit`` lines for a skill result (see the module's docstring)."""
    lines = [line.text for line in result_line_parts(result, language)]
    if len(lines) > MAX_LINES:
        more = language.lines_more.format(count=len(lines) - MAX_LINES)
        lines = [*lines[:MAX_LINES], more]
    return [line[:MAX_LINE_CHARS] + ("..." if len(line) > MAX_LINE_CHARS else "") for line in lines]


@dataclasses.dataclass(frozen=True)
class _Written:
    """Text a field writes as it is (a closing bracket, a reading said whole), among the parts
    of a result :func:`_field_text` walks."""

    text: str


def _field_text(node: Any) -> str:
    """A part of a result as a field shows it: a reading as ``22.7 °C``, an object as
    ``{key:value,...}`` (a reading in it with its value and unit at its ``value``), a list as
    ``[a,b]``, a string bare unless it is empty or breaks a line (then as JSON spells it).
    Inside an object or a list there are no blanks: a blank before a digit is a token of its
    own to a tokenizer that spells every digit alone."""
    out: list[str] = []

    def visit(part: Any, before: str) -> list[tuple[Any, str]]:
        out.append(before)
        if isinstance(part, _Written):
            out.append(part.text)
        elif isinstance(part, dict):
            reading = _reading(part)
            if reading is not None and part.keys() == {"value", "unit"}:
                out.append(reading)
                return []
            shown = [
                (_Written(reading) if key == "value" and reading is not None else value, key)
                for key, value in part.items()
                if reading is None or key != "unit"
            ]
            out.append("{")
            inner = [(v, f"{',' if i else ''}{_bare(k)}:") for i, (v, k) in enumerate(shown)]
            return [*inner, (_Written("}"), "")]
        elif isinstance(part, list):
            out.append("[")
            return [*((item, "," if i else "") for i, item in enumerate(part)), (_Written("]"), "")]
        else:
            out.append(_bare(part) if isinstance(part, str) else compact_json(part))
        return []

    walk(node, visit, "")
    return "".join(out)


def _reading(node: dict[str, Any]) -> str | None:
    """:func:`reading_text` where it shows on one line (a unit that breaks it is a field)."""
    reading = reading_text(node)
    return reading if reading is not None and reading.isprintable() else None


def _bare(text: str) -> str:
    return text if text and text.isprintable() else compact_json(text)


def _fields(node: dict[str, Any], reading: str | None, colon: str = ": ") -> list[str]:
    """``key: value`` for each key of an object; a reading's unit goes with its value."""
    fields = []
    for key, value in node.items():
        if reading is not None and key in ("value", "unit"):
            if key == "value":
                fields.append(f"{_bare(key)}{colon}{reading}")
        else:
            fields.append(f"{_bare(key)}{colon}{_field_text(value)}")
    return fields


def result_fields(result: Any) -> str:
    """A skill result as fields (see the module's docstring): an object's keys one to a line
    (``memory: {total_mib:3793.3,available_mib:2367.0}``), anything else on one line."""
    if isinstance(result, dict) and result:
        reading = _reading(result)
        if reading is None or result.keys() != {"value", "unit"}:
            return "\n".join(_fields(result, reading))
    return _field_text(result)


__all__ = [
    "DIGIT",
    "Line",
    "alternative_forms",
    "count_text",
    "counted",
    "is_number",
    "item_label",
    "name_words",
    "names_unit",
    "reading_text",
    "result_fields",
    "result_line_parts",
    "result_lines",
    "scalar_text",
]
