"""Answers the engine states from the results (docs/design.md, "Small models").

A small model that writes its own answer makes claims with its free words, even when every
digit is bound to the evidence: "The CPU is overheating: 51.687 °C.", "Yes, the front door is
open." for a result that says ``closed``. So for a guided model the engine writes the sentences
and the model only chooses among them, by its likelihood of each as its reply
(:meth:`~edge_agentd.agent.guidance.Guidance`). Every sentence is built from a result's lines
(:mod:`~edge_agentd.agent.resultlines`), the names of the skills that gave them, and the
question, with a handful of words of the engine's own (:data:`TEMPLATE_WORDS`):

- **A reading, a number or a text**: "The <label> is <value>.", where the label is the line's
  own key ("humidity" of ``readings humidity``), its whole name, the skill's name for a bare
  value (``cpu_temperature``), a sibling text that says which one ("front door" of ``{"door":
  "front", "state": "closed"}``, so "The front door is closed."), or the question's own subject
  when each of its words is one of the line's (so "The CPU temperature is 48.3 °C." but never
  "The air pressure is 41.5 %RH.").
- **A list**: its names ("The sensors are cpu, bme280 and probe.") and its count ("There are 3
  sensors.").
- **Both parts of a question in two parts**: a sentence for each, joined by "and".
- **"I cannot tell: no result says <subject>."** where the question's subject is unknown to the
  evidence (:mod:`~edge_agentd.agent.subject`), where nothing was returned, and beside the
  others where the subject was not judged.

Nothing here knows any skill or any question word: keys, texts and names are the results'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from edge_agentd.agent.resultlines import (
    Line,
    is_number,
    item_label,
    reading_text,
    result_line_parts,
)
from edge_agentd.agent.subject import question_subject

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


def _labels(line: Line, lines: Sequence[Line], skill_name: str, question: str) -> list[list[str]]:
    """The labels a line's value may be stated under (see the module's docstring)."""
    name = _key_words(line.name)
    key = _key_words(line.name.split()[-1]) if line.name.split() else []
    skill = _key_words(skill_name)
    own = key if key and line.name not in _PLACEHOLDER else skill
    labels = [own, name if line.name not in _PLACEHOLDER else skill]
    qualifier = _qualifier(line, lines)
    if qualifier is not None:
        # The text whole, as the result writes it ("28-0316a2791bff", "washing machine").
        value, sibling_key = qualifier
        which = [value, *_key_words(sibling_key)]
        labels += [[value], which, [*which, *own]]
    # The question's subject, when the line's own label and what says which one hold each of
    # its words (or their plural or singular): the label then claims nothing the result does
    # not ("CPU temperature" of ``cpu_temperature``, never "air pressure" of ``humidity``).
    subject = question_subject(question)
    if subject is not None:
        held = [*own, *(w for label in labels[2:] for w in label)]
        vocabulary = {w.casefold() for text in held for w in words_of(text)}
        asked = [w for word in (*subject.which, subject.head) for w in words_of(word)]
        if asked and all(_forms(w) & vocabulary for w in asked):
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


def line_sentences(line: Line, lines: Sequence[Line], skill_name: str, question: str) -> list[str]:
    """The sentences that state ``line`` of a result whose lines are ``lines``."""
    sentences = []
    node = line.node
    for label in _labels(line, lines, skill_name, question):
        said = _spell(label, question)
        if isinstance(node, list):
            names = _list_names(node)
            if names:
                sentences.append(f"The {said} {_verb(label)} {_joined(names)}.")
            sentences.append(f"There are {len(node)} {said}.")
        elif is_number(node) and line.shown.startswith(f"{node} in all"):
            sentences.append(f"There are {node} {said}.")  # a list's count (how many)
        else:
            value = line.shown.strip()
            if value and len(value) <= MAX_VALUE_CHARS and label != words_of(value):
                sentences.append(f"The {said} {_verb(label)} {value}.")
    return sentences


def sentences_for(asked: Sequence[tuple[str, Any, Sequence[Line]]], question: str) -> list[str]:
    """The sentences stating the ``asked`` lines, each given as ``(skill_name, result, lines)``
    (the lines of that result the question asks about), at most :data:`MAX_SENTENCES`."""
    found: dict[str, None] = {}
    for skill_name, result, chosen in asked:
        lines = result_line_parts(result)
        # Each line renders a sentence or more: a result of thousands of lines is stated from
        # its first few asked ones, as its turn shows only its first lines.
        for line in list(chosen)[:MAX_SENTENCES]:
            for sentence in line_sentences(line, lines, skill_name, question):
                if '"' not in sentence and "\\" not in sentence and sentence.isprintable():
                    found.setdefault(sentence, None)
    return list(found)[:MAX_SENTENCES]


def cannot_tell_sentence(question: str) -> str:
    """ "I cannot tell: no result says <the question's subject>." (its words the question's)."""
    subject = question_subject(question)
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
