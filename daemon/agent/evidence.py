"""Answers bound to the evidence: values a small model can only copy from the results.

Two helps for a small model's final answer (docs/design.md, "Small models"), built from nothing
but the skill results and the question, so they work for any skill:

- **Result lines** (:mod:`edge_agentd.agent.resultlines`): a result as short lines.
- **Copy-only values.** While the model writes its answer, a digit can only come as part of a
  value copied whole from the evidence: a reading with its own unit (``22.7 °C``, never
  ``22.7 degrees``), a number of the results or the question, or a text holding digits (a date,
  a time, a sensor's name). A number without a unit is followed by punctuation or a word the
  evidence holds (``2367.0 MiB`` after ``available_mib``; ``3 sensors`` after ``sensors``), so
  no unit can be invented after it either. This is a pattern on the answer string of the action
  schema; the decoder enforces it and the model still writes every word.
- **A stated value.** A small model often answers "The processor is hot." or "The date is next
  Friday.", with no value at all. Once there are results, an answer states at least one value of
  them (a number, a reading, a date, a name, a word such as a weekday) or says it cannot tell
  (``I cannot tell ...``): which value, and the words around it, are the model's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from typing import Any

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.jsonvalues import walk
from edge_agentd.agent.language import Language
from edge_agentd.agent.resultlines import (
    DIGIT,
    Line,
    alternative_forms,
    counted,
    is_number,
    item_label,
    name_words,
    names_unit,
    reading_text,
    scalar_text,
)

MAX_VALUES = 96
"""The most values one answer may copy from: the grammar stays small and quick to build."""
MAX_VALUE_CHARS = 48
MAX_WORDS = 8
"""The most words one value may be followed by (its name's)."""
MAX_WORDS_BEFORE = 12
"""The most words an answer may write before it states a value of the results."""

_QUESTION_NUMBER = re.compile(r"(?<![\w.])-?[0-9]+(?:\.[0-9]+)?(?![\w])")
"""A number the question writes on its own: not the 280 of a name such as BME280."""
_QUESTION_NAME = re.compile(r"(?<![\w-])(?=[\w-]*[0-9])(?=[\w-]*[^\W\d_])\w+(?:-\w+)*(?![\w-])")
"""A name the question writes with digits in it (``BME280``, ``DS18B20``, ``1-Wire``): copied
whole, as the question spells it. Its digits alone could not be: a small model stopped after
"BME" would put a copied reading where the rest of the name belongs."""


def plain_chars(language: Language = ENGLISH) -> str:
    """What an answer may write between copied values, as a class of a regular expression:
    the language's letters and punctuation, no digit, no sign (a ``-`` before a copied 4 would
    make it -4), nothing that would need a JSON escape, and no sentence's end: the answer is
    one sentence, ending in ``.``, ``!`` or ``?`` or in nothing (a small model that may go on
    repeats its answer until the token cap)."""
    return language.answer_letters + language.between


AFTER_NUMBER = (", ", ";", ": ", ")")
"""What may follow a copied number that has no unit, besides a word of the evidence (a comma, a
colon or a stop only with a space: "1,000", "10:10" or "1.5" would make one value of two, such
as a time "10:10:10" built from the question's "10 days")."""


@dataclasses.dataclass(frozen=True)
class Copyable:
    """What an answer may copy: values that hold digits, and the words a bare number may take."""

    values: tuple[str, ...]
    """Each text an answer may copy whole; every digit of an answer comes from one of them."""
    words: tuple[tuple[str, ...], ...]
    """For each value, the words that may follow it: those of its own name (``available_mib``
    gives "available" and "mib"), so no unit of another value can be put after it."""
    stated: tuple[str, ...] = ()
    """The values of the results an answer may state (those of :attr:`values` that came from a
    result, and the results' words the question does not already hold): an answer states one of
    them or says it cannot tell. Empty: no result, nothing required."""


def copyable(
    results: Iterable[Any],
    question: str,
    asked: Sequence[Line] | None = None,
    language: Language = ENGLISH,
) -> Copyable:
    """The values and words of ``results`` (as their lines show them) and of ``question``.
    With ``asked``, the lines the question asks about, only their values are to be stated;
    every value of the results may still be copied."""
    values: dict[str, dict[str, None]] = {}
    stated: dict[str, None] = {}
    labels: set[str] = set()
    folded = question.casefold()
    stating = asked is None

    def add_word(text: str) -> None:
        # A word a result holds as a value (a weekday, a state, a label); not one the question
        # already says, which stating would not answer.
        text = text.strip()
        plain = stating and _word_value(text, language)
        if plain and len(text) >= 3 and text not in labels and text.casefold() not in folded:
            stated.setdefault(text, None)

    def add_value(text: str, names: Sequence[str] = (), from_result: bool = True) -> None:
        # Ending in a letter or a digit: "1." copied before a "5" would read 1.5.
        text = text.strip().rstrip(".,;:!?-+ ")
        clean = text.isprintable() and '"' not in text and not _UNSAFE.intersection(text)
        if DIGIT.search(text) and len(text) <= MAX_VALUE_CHARS and clean:
            # A sign is copied with a space before it: after a letter or a stop, a reader would
            # not read "-3.5" as negative, and the number read would be one the evidence lacks.
            shown = f" {text}" if text[0] in "-+" else text
            own = values.setdefault(shown, {})
            if from_result and stating:
                stated.setdefault(shown, None)
            for name in names:
                # Only a whole word of the name: the "min" of "1min" is no unit of its value.
                for word in name_words(name, language):
                    own.setdefault(word.lower(), None)

    At = tuple[tuple[str, ...], bool, bool]
    """The names of the keys a part is under, whether it is in a list's item, and whether it
    is a list's item itself."""

    def visit(node: Any, at: At) -> list[tuple[Any, At]]:
        names, in_item, item = at
        if isinstance(node, dict):
            if item:
                # An item's label (a reading's quantity) names it, and is no answer.
                labels.add(item_label(node, "", 0))
            reading = reading_text(node)
            forms = alternative_forms(node) if reading is not None else {}
            named = [key for key, form in forms.items() if names_unit(form, question, language)]
            if reading is not None:
                # The question names another form's unit: that form is the one to state.
                add_value(reading, from_result=not named)
            for key in named:
                add_value(str(reading_text(forms[key])))
            # Another form of the reading is copied only when the question asks for it.
            return [
                (value, ((*names, str(key)), in_item, False))
                for key, value in node.items()
                if key not in forms and (reading is None or key not in ("value", "unit"))
            ]
        if isinstance(node, list):
            if counted(node, in_item):
                add_value(str(len(node)), names)
            return [(value, (names, True, True)) for value in node]
        if is_number(node):
            add_value(scalar_text(node), names[-1:])
        elif isinstance(node, str):
            add_value(node, names[-1:])
            add_word(node)
        return []

    top: At = ((), False, False)
    for result in results:
        walk(result, visit, top)
    if asked is not None:
        stating = True
        for line in asked:
            walk(line.node, visit, (tuple(line.name.split()), False, False))
    for match in _QUESTION_NAME.finditer(question):
        after = question[match.end() :].split()[:1]
        add_value(match.group(), after, from_result=False)
    for match in _QUESTION_NUMBER.finditer(question):
        # A number of the question may be followed by the word after it there ("10 days").
        after = question[match.end() :].split()[:1]
        add_value(match.group().lstrip("-"), after, from_result=False)
    kept = list(values.items())[:MAX_VALUES]
    copied = {v for v, _ in kept}

    def required(found: Iterable[str]) -> tuple[str, ...]:
        # A value the question holds too may be stated: "is the load 0.42?" is answered by it.
        return tuple([v for v in found if v in copied or not DIGIT.search(v)][:MAX_VALUES])

    return Copyable(
        tuple(v for v, _ in kept),
        tuple(tuple(list(w)[:MAX_WORDS]) for _, w in kept),
        required(stated),
    )


MAX_WORD_VALUE = 32


def _word_value(text: str, language: Language) -> bool:
    """Whether a result's text is a word or words (``Thursday``, ``charging``) of at most
    :data:`MAX_WORD_VALUE` characters, opening with a letter: it can be stated."""
    return (
        0 < len(text) <= MAX_WORD_VALUE
        and language.letters.match(text) is not None
        and all(language.letters.fullmatch(w) for w in text.split(" ") if w)
    )


_UNSAFE = set("[]^\\")
"""Characters a copied value may not hold: the grammar could not spell them plainly."""


def _literal(text: str) -> str:
    """``text`` as a regular expression that matches it alone. Special characters go in a class
    (``[.]``), never behind a backslash: llama.cpp's grammar reads no ``\\.`` in a literal."""
    return text.translate(_IN_A_CLASS)


_IN_A_CLASS = str.maketrans({c: f"[{c}]" for c in ".$|?*+(){}"})


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else _literal(c) for c in word)


def asked_text_pattern(question: str, language: Language = ENGLISH) -> str:
    """A regular expression every text of ``question``'s own words (and digits) matches, in
    any case, with its own marks and blanks between them: what a call's free-text argument
    may say ("next Wednesday", "4 July 1976"), never a word or number the question does not
    write ("next friday", "4/7/1976")."""
    words = dict.fromkeys(
        [
            *language.token.findall(question),
            *language.word.findall(question),
            *_DIGIT_RUN.findall(question),
        ]
    )
    marks = sorted({c for c in question if not c.isalnum() and c not in _UNSAFE_IN_A_CLASS} | {" "})
    options = [_any_case(word) for word in words if word]
    return "^(" + "|".join([*options, "[" + "".join(marks) + "]"]) + ")+$"


_DIGIT_RUN = re.compile(r"\d+")
_UNSAFE_IN_A_CLASS = "]\\^-[\n\r\t"


def answer_pattern(evidence: Copyable, language: Language = ENGLISH) -> str:
    """A regular expression (``^...$``, in the subset llama.cpp's JSON-schema converter reads:
    groups, alternatives, classes, ``*``) that every answer string under copy-only decoding
    matches, and that no string with a digit not copied from ``evidence`` matches. With values
    to state, it matches only answers that state one, or that begin ``I cannot tell``."""
    plain = f"[{plain_chars(language)}]"
    punctuation = "|".join(_literal(c) for c in AFTER_NUMBER)
    # After a value's own word, a character that is no letter: "min" cannot grow to "minutes".
    not_letter = f"[{language.between}]"
    # Each value as it may be written with more to follow (a number without a unit only before
    # punctuation or its own word), and, for a number, as the answer's last words.
    going: dict[str, str] = {}
    ending: dict[str, str] = {}
    for value, words in zip(evidence.values, evidence.words, strict=True):
        if not value[-1].isdigit():
            # One ending in a letter is followed by no letter or digit, or ends the answer:
            # "1-Wireprobe" or "°C28-0316a2791bff" would read as a name the evidence lacks.
            glued = value[-1].isalpha()
            going[value] = _literal(value) + (not_letter if glued else "")
            if glued:
                ending[value] = _literal(value)
            continue
        named = "(" + "|".join(_any_case(w) for w in words) + ")" if words else None
        follow = punctuation + (f"| {named}{not_letter}" if named else "")
        going[value] = f"{_literal(value)}({follow})"
        ending[value] = _literal(value) + (f"( {named})?" if named else "")
    end = "([.!?])?"
    # An answer opens with a letter or a copied value: an empty one (which the loop would refuse,
    # and which noise reaches by closing the string at once) is not one the decoder can write.
    first = f"[{language.answer_letters}]"
    free = f"{first}{plain}*"
    if not going and not evidence.stated:
        return f"^{free}{end}$"
    step = _either(going.values())
    last = _either(ending.values())
    # A value is copied after the answer's start or a character that is no letter: "BME22.7 °C"
    # would read as a name the evidence lacks.
    gap = f"({plain}*{not_letter})?"
    opening = f"({first}{plain}*{not_letter})?"
    ends = f"|{gap}{last}" if last else ""
    tail = f"({gap}{step})*({plain}*{ends})" if going else ""
    if not evidence.stated:
        only_last = f"|{opening}{last}" if last else ""
        return f"^({opening}{step}{tail}{only_last}|{free}){end}$"
    # An answer that states a value: at most MAX_WORDS_BEFORE words or copied values, then the
    # value, then anything again. Unbounded, a small model that will not state one writes on
    # ("The CPU is running hot, and it is not overheating, but ...") until the token cap.
    decline = f"|{language.cannot_tell}{plain}*"
    word = f"[{plain_chars(language).replace(' ,;:', '')}]+[ ,;:]+"
    run = f"({word}){{0,{MAX_WORDS_BEFORE}}}"
    before = f"({word}|{step}){{0,{MAX_WORDS_BEFORE}}}" if going else run
    after = tail if going else f"{plain}*"

    def stating(values: Sequence[str], then: str) -> str:
        # One of ``values``, then ``then``; or, for a number, one as the answer's last words.
        last = _either(ending[v] for v in values if v in ending)
        return f"{_either(going.get(v, _literal(v)) for v in values)}{then}" + (
            f"|{last}" if last else ""
        )

    states = stating(evidence.stated, after)
    return f"^({before}({states}){decline}){end}$"


def _either(forms: Iterable[str]) -> str:
    """One group matching any of ``forms``; empty when there is none."""
    listed = list(dict.fromkeys(forms))
    return "(" + "|".join(listed) + ")" if listed else ""


def cannot_tell_pattern(language: Language = ENGLISH) -> str:
    """The pattern of an answer that says it cannot tell, and states no value: for a question
    about something the evidence does not know (the loop's grounding, grounding.py)."""
    return f"^{language.cannot_tell}[{plain_chars(language)}]*([.!?])?$"


def answer_schema(pattern: str) -> dict[str, Any]:
    """The action schema of a final answer held to ``pattern``."""
    return {
        "type": "object",
        "properties": {"final_answer": {"type": "string", "pattern": pattern}},
        "required": ["final_answer"],
        "additionalProperties": False,
    }


_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
"""A number with its thousands' commas if it has them, else its digits; one look behind for both
forms (with two, the scan tried it twice at every character)."""


def answer_numbers(text: str) -> list[str]:
    """Each number as a reader picks it out of ``text`` (2,873.2 is one; -4 is negative)."""
    # One scan in C: a look at each character in Python first, to skip a text without a digit,
    # cost more than the scan it saved.
    return _NUMBER.findall(text)


def numbers_in(texts: Sequence[str]) -> set[float]:
    """Every number written in ``texts``, as values."""
    return {float(n.replace(",", "")) for n in answer_numbers(one_text(texts))}


def first_unwritten(numbers: Sequence[str], text: str) -> str | None:
    """The first of ``numbers`` (as :func:`answer_numbers` picks them out of an answer) whose
    value ``text`` does not write, or None: ``text`` is read only until each value is found."""
    pending = {float(n.replace(",", "")) for n in numbers}
    if pending:
        for found in _NUMBER.finditer(text):
            pending.discard(float(found.group().replace(",", "")))
            if not pending:
                return None
    return next((n for n in numbers if float(n.replace(",", "")) in pending), None)


def one_text(texts: Sequence[str]) -> str:
    """``texts`` as one, a line each, to be scanned at once: no number, value or unit the
    grounding rules read spans a line break, and one is read after a break as at a start."""
    return "\n".join(texts)


__all__ = [
    "Copyable",
    "answer_numbers",
    "answer_pattern",
    "answer_schema",
    "asked_text_pattern",
    "copyable",
    "first_unwritten",
    "numbers_in",
    "plain_chars",
]
