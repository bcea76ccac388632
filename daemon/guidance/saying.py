"""How one line of a result is said: the sentences a person would use to state it.

:func:`line_sentences` states a line (a reading, a number, a text, a flag, a list) under the
labels :mod:`~edge_agentd.guidance.labels` speaks for it, in the unit the question asks for,
or in a skill's own ``says`` (:func:`says_template`). Which lines are stated, and which of
their sentences answer the question, is :mod:`~edge_agentd.guidance.render`'s to decide.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

from edge_agentd.agent.amounts import unit_named
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.language import Language
from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import (
    Line,
    alternative_forms,
    is_number,
    item_label,
    names_unit,
    reading_text,
)
from edge_agentd.agent.units import asked_units, said_in
from edge_agentd.guidance.counted import counted_things, counts
from edge_agentd.guidance.labels import PLACEHOLDER, key_words, labels, spell, spoken, words_of
from edge_agentd.guidance.since import said_by_its_time, since_sentences

TEMPLATE_WORDS = ENGLISH.own_words
"""Every word an English sentence may hold that is not a result's, a skill's or the question's:
the engine's own, and the units a key's last word says (``kw`` gives "kW", ``s`` "seconds")."""
MAX_VALUE_CHARS = 160
"""A value longer than this is no sentence's: the line shows it cut."""


def _list_names(items: list[Any]) -> list[str] | None:
    """The names of a list's items, as its line shows them; None when one has no name or the
    items are readings (each one's own line names it)."""
    names = [item_label(item, "", index) for index, item in enumerate(items)]
    if any(name.startswith("[") for name in names) or any(
        isinstance(i, dict) and reading_text(i) for i in items
    ):
        return None
    return names


def _joined(names: Sequence[str], language: Language) -> str:
    if len(names) == 1:
        return names[0]
    return language.said_listing.format(names=", ".join(names[:-1]), last=names[-1])


def line_sentences(
    line: Line,
    lines: Sequence[Line],
    skill_name: str,
    question: Question,
    keys: set[str],
    *,
    says: str | None = None,
    fit: bool = False,
) -> list[str]:
    """The sentences that state ``line`` of a result whose lines are ``lines`` and whose
    objects' keys are ``keys``, as ``says`` (the skill's way, see :func:`says_template`) has it
    where it has one. A reading whose other form's unit the question names is stated in that
    form ("What is the CPU temperature in Fahrenheit?"). With ``fit``, a list is said as its
    names, or as its count to a how-many question: the one a person would say."""
    sentences: list[str] = []
    node = line.node
    shown = line.shown.strip()
    la = question.language
    if node is None:
        return sentences  # a null says nothing to state
    held = since_sentences(line, lines, skill_name, question)
    if held is not None or said_by_its_time(line, lines, question):
        return held or []
    if isinstance(node, dict):
        forms = alternative_forms(node).values()
        named = [f for f in forms if names_unit(f, question.text, la)]
        shown = str(reading_text(named[0])) if named else shown
    how_many = la.how_many_question.match(question.text) is not None
    asked = asked_units(question.text, la) if fit else ()
    if fit and how_many and is_number(node) and not asked and question.subject is not None:
        # A count says how many there are: "There are 2 sensors." of a count key beside the
        # list it counts, "There are 2 people home." of ``people_home``; not "The count is 2.".
        counted = counted_things(line, lines, la)
        if len(counted) == 1:
            return [count_sentence(node, " ".join(key_words(counted[0], la)), la)]
        key = line.name.split()[-1] if line.name else ""
        if key.casefold() not in la.count_keys and counts(line, question.subject.head, la):
            return [count_sentence(node, " ".join(key_words(key, la)), la)]
    found = labels(line, lines, skill_name, question, keys)
    # The unit a label's last word gives is the line's, whatever label states it ("The charging
    # power is 7.2 kW." under the question's words too); a single word left of a key that
    # only its unit followed is no label where its path says more ("The available is ...").
    units = [unit for label in found if (unit := spoken(label, node, la)[1])]
    whole = max((len(spoken(label, node, la)[0]) for label in found), default=0)
    for label in found:
        words, unit = spoken(label, node, la)
        if unit and len(words) == 1 and whole > 1:
            continue
        unit = unit or (units[0] if units else None)
        said = spell(words, question.text, la)
        be = la.verb(words)
        if isinstance(node, list):
            names = _list_names(node)
            if names and not (fit and how_many):
                joined = _joined(names, la)
                sentences.append(la.said_names.format(label=said, be=be, names=joined))
            # A count is no answer but to how many: a list of readings, which name no items,
            # is said by each reading's own line ("There are 2 readings." is no probe's).
            if not (fit and not how_many):
                sentences.append(count_sentence(len(node), said, la))
        elif is_number(node) and line.shown.startswith(f"{node} {la.in_all}"):
            # A list's count (how many).
            sentences.append(count_sentence(node, said, la))
        elif isinstance(node, bool):
            answer = (la.yes if node else la.no).lower()
            sentences.append(la.said_flag.format(label=_capital(said), answer=answer))
        elif shown and len(shown) <= MAX_VALUE_CHARS and words != words_of(shown, la):
            # In the unit the question asks for, where the engine can say it so.
            value = said_in(f"{shown} {unit}" if unit else shown, asked)
            template = says if line.name not in PLACEHOLDER or not isinstance(node, str) else None
            if template is not None:
                sentences.append(_capital(template.format(label=said, value=value)))
            elif unit is None and is_number(node) and _opens_with_unit(words, la):
                # "days from today": no thing, but how many of a unit ("It is 3 days from today.")
                sentences.append(str(la.said_amount_value).format(value=shown, label=said))
            else:
                sentences.append(la.said_value.format(label=said, be=be, value=value))
    return sentences


def count_sentence(count: Any, label: str, language: Language) -> str:
    """There are ``count`` of the things ``label`` names."""
    many, one = language.said_count
    return (one if count == 1 else many).format(count=count, label=label)


def _opens_with_unit(words: Sequence[str], language: Language) -> bool:
    """Whether a label's first word is a unit said in words, with more words after it ("days"
    of "days from today"), and the language says such a number as an amount."""
    if language.said_amount_value is None or len(words) < 2:
        return False
    unit = unit_named(words[0], language)
    return unit is not None and unit.casefold() in language.forms(words[0])


def says_template(says: Any) -> str | None:
    """A skill's ``says`` when it is one the renderer can fill: ``{label}`` and ``{value}``
    fields only, ``{value}`` among them, no digit (every number is a result's), no quote or
    backslash; None otherwise."""
    if not isinstance(says, str) or not says.strip() or not says.isprintable():
        return None
    if any(c.isdigit() for c in says) or '"' in says or "\\" in says:
        return None
    try:
        fields = [f for _, f, spec, conv in string.Formatter().parse(says) if f is not None]
    except ValueError:
        return None
    if "value" not in fields or not set(fields) <= {"label", "value"}:
        return None
    return " ".join(says.split())


def _capital(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def clean(sentence: str) -> bool:
    """Whether ``sentence`` can stand in a JSON string and a grammar as written."""
    return '"' not in sentence and "\\" not in sentence and sentence.isprintable()


__all__ = [
    "MAX_VALUE_CHARS",
    "TEMPLATE_WORDS",
    "clean",
    "count_sentence",
    "line_sentences",
    "says_template",
    "words_of",
]
