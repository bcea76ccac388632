"""Answers bound to the evidence: results a small model can read, and values it can only copy.

Two helps for a small model's final answer (docs/design.md, "Small models"), built from nothing
but the skill results and the question, so they work for any skill:

- **Result lines.** A result is shown as short ``name: value unit`` lines instead of nested JSON
  (``temperature: 22.7 °C``, ``memory available_mib: 2367.0``); a reading, any object with a
  numeric ``value`` and a string ``unit``, is one line with its unit; a list says how many items
  it holds. The event keeps the whole result.
- **Copy-only values.** While the model writes its answer, a digit can only come as part of a
  value copied whole from the evidence: a reading with its own unit (``22.7 °C``, never
  ``22.7 degrees``), a number of the results or the question, or a text holding digits (a date,
  a time, a sensor's name). A number without a unit is followed by punctuation or a word the
  evidence holds (``2367.0 MiB`` after ``available_mib``; ``3 sensors`` after ``sensors``), so
  no unit can be invented after it either. This is a pattern on the answer string of the action
  schema; the decoder enforces it and the model still writes every word.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

MAX_LINES = 48
"""A result with more lines than this is cut (the event keeps it whole)."""
MAX_LINE_CHARS = 160
MAX_VALUES = 96
"""The most values one answer may copy from: the grammar stays small and quick to build."""
MAX_VALUE_CHARS = 48
MAX_WORDS = 8
"""The most words one value may be followed by (its name's)."""

_DIGIT = re.compile(r"[0-9]")
_WORD = re.compile(r"[A-Za-z]{2,24}")
_NUMBER_TEXT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")

PLAIN_CHARS = "a-zA-Z ,;:'()/&"
"""What an answer may write between copied values: letters and punctuation, no digit, no sign
(a ``-`` before a copied 4 would make it -4), nothing that would need a JSON escape, and no
sentence's end: the answer is one sentence, ending in ``.``, ``!`` or ``?`` or in nothing (a
small model that may go on repeats its answer until the token cap)."""
AFTER_NUMBER = (", ", ";", ":", ")")
"""What may follow a copied number that has no unit, besides a word of the evidence (a comma or
a stop only with a space: "1,000" or "1.5" would make one number of two)."""


def _shown(value: Any) -> str:
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
        return f"{_shown(value)} {unit.strip()}"
    return None


def _label(item: Any, path: str, index: int) -> str:
    """A list item's name in its lines: its first short string field (a reading's quantity, a
    sensor's name), else its place in the list."""
    if isinstance(item, dict):
        for value in item.values():
            if isinstance(value, str) and 0 < len(value) <= 40 and not _DIGIT.fullmatch(value):
                return f"{path} {value}".strip()
    return f"{path}[{index}]"


def result_lines(result: Any) -> list[str]:
    """``name: value unit`` lines for a skill result (see the module's docstring)."""
    lines: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            reading = reading_text(node)
            if reading is not None:
                lines.append(f"{path or 'value'}: {reading}")
                rest = {k: v for k, v in node.items() if k not in ("value", "unit")}
                for key, item in rest.items():
                    if not isinstance(item, str) or f"{path}".endswith(item):
                        walk(item, f"{path} {key}".strip())
                return
            for key, item in node.items():
                walk(item, f"{path} {key}".strip())
        elif isinstance(node, list):
            lines.append(f"{path or 'items'}: {len(node)} in all")
            for index, item in enumerate(node):
                label = _label(item, path, index)
                if isinstance(item, dict):
                    named = {k: v for k, v in item.items() if f"{path} {v}".strip() != label}
                    walk(named, label)
                else:
                    walk(item, label)
        else:
            lines.append(f"{path or 'value'}: {_shown(node)}")

    walk(result, "")
    if len(lines) > MAX_LINES:
        lines = [*lines[:MAX_LINES], f"... and {len(lines) - MAX_LINES} lines more"]
    return [line[:MAX_LINE_CHARS] + ("..." if len(line) > MAX_LINE_CHARS else "") for line in lines]


@dataclasses.dataclass(frozen=True)
class Copyable:
    """What an answer may copy: values that hold digits, and the words a bare number may take."""

    values: tuple[str, ...]
    """Each text an answer may copy whole; every digit of an answer comes from one of them."""
    words: tuple[tuple[str, ...], ...]
    """For each value, the words that may follow it: those of its own name (``available_mib``
    gives "available" and "mib"), so no unit of another value can be put after it."""


def copyable(results: Iterable[Any], question: str) -> Copyable:
    """The values and words of ``results`` (as their lines show them) and of ``question``."""
    values: dict[str, dict[str, None]] = {}

    def add_value(text: str, names: Sequence[str] = ()) -> None:
        # Ending in a letter or a digit: "1." copied before a "5" would read 1.5.
        text = text.strip().rstrip(".,;:!?-+ ")
        clean = text.isprintable() and '"' not in text and not _UNSAFE.intersection(text)
        if _DIGIT.search(text) and len(text) <= MAX_VALUE_CHARS and clean:
            # A sign is copied with a space before it: after a letter or a stop, a reader would
            # not read "-3.5" as negative, and the number read would be one the evidence lacks.
            own = values.setdefault(f" {text}" if text[0] in "-+" else text, {})
            for name in names:
                for word in _WORD.findall(name):
                    own.setdefault(word.lower(), None)

    def walk(node: Any, names: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            reading = reading_text(node)
            if reading is not None:
                add_value(reading)
            for key, item in node.items():
                if reading is None or key not in ("value", "unit"):
                    walk(item, (*names, str(key)))
        elif isinstance(node, list):
            add_value(str(len(node)), names)
            for item in node:
                walk(item, names)
        elif is_number(node):
            add_value(_shown(node), names[-1:])
        elif isinstance(node, str):
            add_value(node, names[-1:])

    for result in results:
        walk(result, ())
    for match in _NUMBER_TEXT.finditer(question):
        # A number of the question may be followed by the word after it there ("10 days").
        add_value(match.group().lstrip("-"), question[match.end() :].split()[:1])
    kept = list(values.items())[:MAX_VALUES]
    return Copyable(tuple(v for v, _ in kept), tuple(tuple(list(w)[:MAX_WORDS]) for _, w in kept))


_UNSAFE = set("[]^\\")
"""Characters a copied value may not hold: the grammar could not spell them plainly."""


def _literal(text: str) -> str:
    """``text`` as a regular expression that matches it alone. Special characters go in a class
    (``[.]``), never behind a backslash: llama.cpp's grammar reads no ``\\.`` in a literal."""
    return "".join(f"[{c}]" if c in ".$|?*+(){}" else c for c in text)


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else _literal(c) for c in word)


def answer_pattern(evidence: Copyable) -> str:
    """A regular expression (``^...$``, in the subset llama.cpp's JSON-schema converter reads:
    groups, alternatives, classes, ``*``) that every answer string under copy-only decoding
    matches, and that no string with a digit not copied from ``evidence`` matches."""
    plain = f"[{PLAIN_CHARS}]"
    pairs = list(zip(evidence.values, evidence.words, strict=True))
    ends_otherwise = [v for v, _ in pairs if not v[-1].isdigit()]
    punctuation = "|".join(_literal(c) for c in AFTER_NUMBER)
    # After a value's own word, a character that is no letter: "min" cannot grow to "minutes".
    not_letter = "[" + PLAIN_CHARS.replace("a-zA-Z", "") + "]"
    going_on, ending = [], []
    for value, words in pairs:
        if not value[-1].isdigit():
            continue
        named = "(" + "|".join(_any_case(w) for w in words) + ")" if words else None
        follow = punctuation + (f"| {named}{not_letter}" if named else "")
        going_on.append(f"{_literal(value)}({follow})")
        ending.append(_literal(value) + (f"( {named})?" if named else ""))
    steps = []
    if ends_otherwise:
        steps.append("(" + "|".join(_literal(v) for v in ends_otherwise) + ")")
    steps += going_on
    end = "([.!?])?"
    # An answer opens with a letter or a copied value: an empty one (which the loop would refuse,
    # and which noise reaches by closing the string at once) is not one the decoder can write.
    first = "[a-zA-Z]"
    if not steps:
        return f"^{first}{plain}*{end}$"
    step = "(" + "|".join(steps) + ")"
    last = "(" + "|".join(ending) + ")" if ending else ""
    tail = f"{plain}*({step}{plain}*)*" + (f"{last}?" if last else "")
    only_last = f"|{last}" if last else ""
    return f"^(({first}|{step}){tail}{only_last}){end}$"


def answer_schema(pattern: str) -> dict[str, Any]:
    """The action schema of a final answer held to ``pattern``."""
    return {
        "type": "object",
        "properties": {"final_answer": {"type": "string", "pattern": pattern}},
        "required": ["final_answer"],
        "additionalProperties": False,
    }


def answer_numbers(text: str) -> list[str]:
    """Each number as a reader picks it out of ``text`` (2,873.2 is one; -4 is negative)."""
    found = re.finditer(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?", text)
    return [m.group() for m in found]


def numbers_in(texts: Sequence[str]) -> set[float]:
    """Every number written in ``texts``, as values."""
    return {float(n.replace(",", "")) for text in texts for n in answer_numbers(text)}


__all__ = [
    "Copyable",
    "answer_numbers",
    "answer_pattern",
    "answer_schema",
    "copyable",
    "numbers_in",
    "reading_text",
    "result_lines",
]
