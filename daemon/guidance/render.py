"""Answers the engine states from the results (docs/design.md, "Small models").

A small model that writes its own answer makes claims with its free words, even when every
digit is bound to the evidence: "The CPU is overheating: 51.687 °C.", "Yes, the front door is
open." for a result that says ``closed``. So for a guided model the engine writes the sentences
and the model only chooses among them, by its likelihood of each, whole, as its reply
(:class:`~edge_agentd.guidance.guidance.Guidance`). Every sentence is built from a result's
lines (:mod:`~edge_agentd.agent.resultlines`), the names of the skills that gave them, and
the question, with a handful of words of the engine's own (:data:`TEMPLATE_WORDS`):

- **A reading, a number or a text**: "The <label> is <value>.", where the label is the line's
  own key ("humidity" of ``readings humidity``), its whole name when each part is a key, a list
  item's name before the key ("The fern moisture is 58.0 %."), the skill's name for a bare
  value (``rain_barrel_level``), what the object calls itself before the key (``{"door":
  "front", "state": "closed"}`` gives "The front door state is closed."), or the question's
  own subject when the line's labels hold each of its words and its head is the line's key or,
  for a state, what the object is (so "The front door is closed." and "The CPU temperature is
  48.3 °C.", but never "The air pressure is 41.5 %RH." of a humidity line).
- **A list**: its names ("The sensors are cpu, bme280 and probe.") and its count ("There are 3
  sensors.").
- **Both parts of a question in two parts**: a sentence for each, joined by "and".
- **"I cannot tell: no result says <subject>."** where the question's subject is unknown to the
  evidence (:mod:`~edge_agentd.guidance.subject`), where nothing was returned, and beside the
  others where the subject was not judged.

Nothing here knows any skill or any question word: keys, texts and names are the results'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import (
    Line,
    alternative_forms,
    is_number,
    item_label,
    names_unit,
    reading_text,
    result_line_parts,
)

CANNOT_TELL = "I cannot tell"
"""How an answer that states no value begins."""
TEMPLATE_WORDS = frozenset(
    [
        "the",
        "is",
        "are",
        "there",
        "in",
        "all",
        "and",
        "no",
        "result",
        "says",
        "i",
        "cannot",
        "tell",
        "what",
        "was",
        "asked",
    ]
)
"""Every word a rendered sentence may hold that is not a result's, a skill's or the question's."""
MAX_SENTENCES = 32
"""The most sentences offered for one part of an answer: each is a branch the model scores."""
MAX_LABEL_WORDS = 6
"""A label longer than this (a deep path) is not offered: its last key or a sibling says it."""
MAX_VALUE_CHARS = 160
"""A value longer than this is no sentence's: the line shows it cut."""
_PLACEHOLDER = frozenset({"value", "items"})
"""The names :func:`~edge_agentd.agent.resultlines.result_line_parts` gives a line with no key
of its own (a bare reading, a bare list): the skill's name says what it is instead."""
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


def words_of(text: str) -> list[str]:
    """The words of ``text`` as a label uses them: runs of letters and digits (``available_mib``
    gives "available" and "mib")."""
    return _WORD.findall(text)


def _key_words(text: str) -> list[str]:
    """The words of a key or a name that a label may use: those with a letter, not opening with
    a digit (the "1" of a key ``_1``, or of ``_1a``, would read as a number the result does not
    state)."""
    return [w for w in words_of(text) if _LETTER.search(w) and not w[0].isdigit()]


def _spell(label: Sequence[str], question: str) -> str:
    """``label``'s words, each as the question spells it where the question has it ("CPU" for
    a key's "cpu")."""
    spelled = {w.casefold(): w for w in words_of(question) if _LETTER.search(w)}
    return " ".join(spelled.get(w.casefold(), w) for w in label)


def _verb(label: Sequence[str]) -> str:
    last = label[-1].casefold() if label else ""
    return "are" if last.endswith("s") and not last.endswith("ss") and len(last) > 3 else "is"


def _prefix(line: Line) -> tuple[str, ...]:
    return tuple(line.name.split()[:-1])


def _qualifier(line: Line, lines: Sequence[Line]) -> tuple[str, str] | None:
    """``(value, key)`` of the first short text of the object ``line`` is in, when that is not
    ``line`` itself: what the object calls itself, as a list item's line does (``front`` of
    ``{"door": "front", "state": "closed"}``). One without a letter (a date) names nothing."""
    if isinstance(line.node, list):
        return None  # a list is named by its own key: "There are 2 bme280" says nothing
    for other in lines:
        node = other.node
        if _prefix(other) != _prefix(line) or not isinstance(node, str) or not other.name:
            continue
        fits = 0 < len(node.strip()) <= 40 and _LETTER.search(node) and len(words_of(node)) <= 3
        if other == line or not fits:
            return None
        return node.strip(), other.name.split()[-1]
    return None


def _reading_of(form: Line, lines: Sequence[Line]) -> Line:
    """The reading line another form's line belongs to (stated in the asked form, under the
    reading's own labels), or the form's line itself when there is none."""
    for line in lines:
        node = line.node
        if not line.alternative and isinstance(node, dict) and form.node in node.values():
            return line
    return form


def _keys(node: Any) -> set[str]:
    """Every key of the objects in ``node``."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.update(str(key) for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _labels(
    line: Line, lines: Sequence[Line], skill_name: str, question: Question, keys: set[str]
) -> list[list[str]]:
    """The labels a line's value may be stated under (see the module's docstring). The line's
    whole name is one only when each part of it is a key: a list item's part is its value
    ("sensors 28-0316a2791bff measures"), no label."""
    whole = all(part in keys for part in line.name.split())
    name = _key_words(line.name) if whole else []
    key = _key_words(line.name.split()[-1]) if line.name.split() else []
    skill = _key_words(skill_name)
    own = key if key and line.name not in _PLACEHOLDER else skill
    labels = [own, name if line.name not in _PLACEHOLDER else skill]
    # A part of the name that is no key is a list item's own name ("fern" of ``plants fern
    # moisture``): it says which one, taken whole ("The fern moisture is 58.0 %.").
    items = [part for part in line.name.split()[:-1] if part not in keys]
    if items:
        labels.append([items[-1], *own])
    qualifier = _qualifier(line, lines)
    heads = {w.casefold() for w in own}
    if qualifier is not None:
        # The text whole, as the result writes it ("28-0316a2791bff", "washing machine"), and
        # always before the line's own key: "The temperature quantity difference is 25.6 °C",
        # never "The temperature is 25.6 °C" of a difference.
        value, sibling_key = qualifier
        which = [value, *_key_words(sibling_key)]
        # A bare value is the object's own ("The bme280 sensor is 61.0.").
        labels.append(which if line.name in _PLACEHOLDER else [*which, *own])
        if isinstance(line.node, str):
            # A state is the state of what the object is: the "door" of ``{"door": "front"}``.
            heads |= {w.casefold() for w in _key_words(sibling_key)}
    # The question's subject, when the line's own label and what says which one hold each of
    # its words (or their plural or singular), its head the line's key or, for a state, what
    # the object is: the label then claims nothing the result does not ("CPU temperature" of
    # ``cpu_temperature``, "front door" of a front door's state; never "air pressure" of
    # ``humidity``, nor "temperature" of a difference of temperatures).
    subject = question.subject
    if subject is not None:
        held = [*own, *(w for label in labels[2:] for w in label)]
        vocabulary = {w.casefold() for text in held for w in words_of(text)}
        asked = [w for word in (*subject.which, subject.head) for w in words_of(word)]
        if asked and all(_forms(w) & vocabulary for w in asked) and _forms(asked[-1]) & heads:
            labels.append(asked)
    kept: dict[tuple[str, ...], None] = {}
    for label in labels:
        if label and len(label) <= MAX_LABEL_WORDS:
            kept.setdefault(tuple(label), None)
    return [list(label) for label in kept]


def _forms(word: str) -> set[str]:
    """``word`` case folded, with its plural and singular."""
    folded = word.casefold()
    return {folded, folded.removesuffix("s"), f"{folded}s"}


def _list_names(items: list[Any]) -> list[str] | None:
    """The names of a list's items, as its line shows them; None when one has no name or the
    items are readings (each one's own line names it)."""
    names = [item_label(item, "", index) for index, item in enumerate(items)]
    if any(name.startswith("[") for name in names) or any(
        isinstance(i, dict) and reading_text(i) for i in items
    ):
        return None
    return names


def _joined(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def line_sentences(
    line: Line, lines: Sequence[Line], skill_name: str, question: Question, keys: set[str]
) -> list[str]:
    """The sentences that state ``line`` of a result whose lines are ``lines`` and whose
    objects' keys are ``keys``. A reading whose other form's unit the question names is stated
    in that form ("What is the CPU temperature in Fahrenheit?")."""
    sentences: list[str] = []
    node = line.node
    shown = line.shown.strip()
    if node is None:
        return sentences  # a null says nothing to state
    if isinstance(node, dict):
        named = [f for f in alternative_forms(node).values() if names_unit(f, question.text)]
        shown = str(reading_text(named[0])) if named else shown
    for label in _labels(line, lines, skill_name, question, keys):
        said = _spell(label, question.text)
        if isinstance(node, list):
            names = _list_names(node)
            if names:
                sentences.append(f"The {said} {_verb(label)} {_joined(names)}.")
            sentences.append(f"There are {len(node)} {said}.")
        elif is_number(node) and line.shown.startswith(f"{node} in all"):
            sentences.append(f"There are {node} {said}.")  # a list's count (how many)
        elif shown and len(shown) <= MAX_VALUE_CHARS and label != words_of(shown):
            sentences.append(f"The {said} {_verb(label)} {shown}.")
    return sentences


def sentences_for(
    asked: Sequence[tuple[str, Any, Sequence[Line]]], question: Question
) -> list[str]:
    """The sentences stating the ``asked`` lines, each given as ``(skill_name, result, lines)``
    (the lines of that result the question asks about), at most :data:`MAX_SENTENCES`."""
    found: dict[str, None] = {}
    for skill_name, result, chosen in asked:
        lines = result_line_parts(result)
        keys = _keys(result)
        # Each line renders a sentence or more: a result of thousands of lines is stated from
        # its first few asked ones, as its turn shows only its first lines.
        for asked_line in list(chosen)[:MAX_SENTENCES]:
            line = _reading_of(asked_line, lines) if asked_line.alternative else asked_line
            for sentence in line_sentences(line, lines, skill_name, question, keys):
                if '"' not in sentence and "\\" not in sentence and sentence.isprintable():
                    found.setdefault(sentence, None)
    return list(found)[:MAX_SENTENCES]


def cannot_tell_sentence(question: Question) -> str:
    """ "I cannot tell: no result says <the question's subject>." (its words the question's)."""
    subject = question.subject
    if subject is None:
        return f"{CANNOT_TELL}: no result says what was asked."
    phrase = " ".join([*subject.which, subject.head])
    if subject.of:
        phrase += " of the " + " ".join(subject.of)
    if '"' in phrase or "\\" in phrase or not phrase.isprintable():
        return f"{CANNOT_TELL}: no result says what was asked."
    return f"{CANNOT_TELL}: no result says the {phrase}."


def both_parts(first: str, second: str) -> str:
    """One sentence stating both parts of a question in two parts."""
    return f"{first.removesuffix('.')} and {second[:1].lower()}{second[1:]}"


def sentence_words(sentence: str) -> list[str]:
    """The words of a rendered sentence, for checking where each came from."""
    return words_of(sentence)


def evidence_words(texts: Iterable[str]) -> frozenset[str]:
    """The words of ``texts``, case folded."""
    return frozenset(w.casefold() for text in texts for w in words_of(text))


__all__ = [
    "CANNOT_TELL",
    "MAX_SENTENCES",
    "TEMPLATE_WORDS",
    "both_parts",
    "cannot_tell_sentence",
    "evidence_words",
    "line_sentences",
    "sentence_words",
    "sentences_for",
    "words_of",
]
