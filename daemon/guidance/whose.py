"""Whose line a sentence states: the thing a result's line is about, set beside the thing the
question asks about (docs/design.md, "Small models", "Bound to the question").

A word of the question that says which one ("free", "used", "available") is also a word of
many keys: of a status that holds a memory's and a disk's, "free" names the disk's line
``disk free_gib``. When the question's thing itself ("RAM") is named by none of that line's own
words, and the object the line is in ("disk") by none of the question's, the line is another
thing's, and stating it would be the right value of the wrong thing. Such a line is not offered
on its word that says which one alone; the answer then waits for a line whose own words hold
the question's thing, or is "I cannot tell".

A line the question's thing is named by (its own key, its object's name or label: a reading
under a sensor labelled "DS18B20"), or a line at the top of its result (whose object is the
result itself, a plugin's ``state_of_charge_percent``), is the question's as before. Every word
is a result's key or text, or the question's: nothing here knows a skill.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from edge_agentd.agent.claims import quality_nouns, unnamed_subject
from edge_agentd.agent.jsonvalues import inside, walk
from edge_agentd.agent.language import Language
from edge_agentd.agent.question import Question, Subject
from edge_agentd.agent.resultlines import Line
from edge_agentd.agent.vocabulary import is_known, known_words
from edge_agentd.guidance.labels import object_texts, prefix


def names_its_readings(lines: Sequence[Line]) -> bool:
    """Whether ``lines`` (a result's) hold readings in a list that say which thing each is (a
    compare's two sensors, by their labels): the call that gave them says of none which."""
    texts = object_texts(lines)
    return any(isinstance(x.node, dict) and tuple(x.name.split()) in texts for x in lines)


def names_thing(question: Question, words: frozenset[str]) -> bool:
    """Whether ``words`` name the thing ``question`` asks about: its head, or, asked "how
    <adjective>", the adjective or a noun of its quantity; not only a word that says which
    one."""
    subject = question.subject
    if subject is None:
        return True
    head = Subject((), subject.head, quality=subject.quality)
    alone = dataclasses.replace(question, subject=head, parts=())
    if unnamed_subject(alone, words) is None:
        return True
    # "How damp is the cellar?" asks the cellar's humidity: a line of that quantity is it.
    quality = subject.quality
    asked = (quality, *quality_nouns(quality, question.language)) if quality else ()
    return any(is_known(word, words, question.language) for word in asked)


def object_words(
    line: Line, texts: dict[tuple[str, ...], list[str]], language: Language
) -> frozenset[str]:
    """The words of the objects ``line`` is in: their keys on its path and their short texts
    (``texts``, :func:`~edge_agentd.guidance.labels.object_texts`); empty for a line at the top
    of its result, whose object is the result itself."""
    path = prefix(line)
    if not path:
        return frozenset()
    found = [t for depth in range(len(path) + 1) for t in texts.get(path[:depth], ())]
    if isinstance(line.node, dict):
        found += texts.get(tuple(line.name.split()), ())  # a reading's own texts
    return known_words([*path, *found], [], language)


def of_another_thing(
    question: Question,
    line: Line,
    own: frozenset[str],
    texts: dict[tuple[str, ...], list[str]],
    call: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``line``, whose own words are ``own``, is another thing's than the one
    ``question`` asks about (see the module's docstring): its own words do not name the
    question's thing, it sits in an object, and no word of the question's subject names that
    object, nor the words of the call that gave the result (``call``: every object of a
    result the call names is the call's thing)."""
    subject, language = question.subject, question.language
    if subject is None or names_thing(question, own):
        return False
    around = object_words(line, texts, language)
    if not around:
        return False
    around |= call
    said = (*subject.words, *subject.owner, *subject.where)
    return not any(language.letters.search(w) and is_known(w, around, language) for w in said)


def of_question(
    question: Question,
    lines: Sequence[Line],
    own: dict[int, frozenset[str]],
    texts: dict[tuple[str, ...], list[str]],
    qualifiers: Sequence[str] = (),
    *,
    call: frozenset[str] = frozenset(),
) -> list[Line]:
    """Those of ``lines`` (each with its own words in ``own``, by id) that are not another
    thing's (:func:`of_another_thing`; ``call``, the words of the call that gave them); none
    when the question's ``qualifiers`` (its words that say which one) name only lines of
    another thing: the line left holds neither what was asked nor the word that says which
    one ("the pools" of "How much of the drive is used?", where only each pool's lines are
    "used")."""
    kept = [
        line for line in lines if not of_another_thing(question, line, own[id(line)], texts, call)
    ]
    language = question.language

    def qualified(line: Line) -> bool:
        # A word of its own path ("free" of ``disk free_gib``), not of a text it is named by.
        path = known_words([line.name], [], language)
        return any(is_known(word, path, language) for word in qualifiers)

    if any(qualified(line) for line in lines) and not any(qualified(line) for line in kept):
        return []
    return _of_the_named_object(question, kept, texts)


def of_another_choice(spec: Any, result: Any, question: Question) -> bool:
    """Whether ``result`` is of another of its skill's choices than ``question`` names: of an
    argument's values as the skill lists them now (``quantity``: temperature, humidity), its
    texts state one (``temperature``) and the question names others (``humidity``) but none
    of those. The skill's own words, which name every choice, then vouch for none of its lines:
    a sensor's name and label are no humidity."""
    current = getattr(spec, "current_choices", None)
    if current is None:
        return False
    language = question.language
    asked = known_words([question.text], [], language)
    found: list[str] = []

    def visit(node: Any, at: None) -> list[tuple[Any, None]]:
        if isinstance(node, str):
            found.append(node)
        return inside(node, at)

    walk(result, visit, None)
    stated = known_words(found, [], language)

    def named(value: Any, words: frozenset[str]) -> bool:
        own = known_words([str(value)], [], language)
        return bool(own) and all(is_known(word, words, language) for word in own)

    for _, values in current():
        in_question = {v for v in values if named(v, asked)}
        in_result = {v for v in values if named(v, stated)}
        if in_question and in_result and not in_question & in_result:
            return True
    return False


def _of_the_named_object(
    question: Question, lines: Sequence[Line], texts: dict[tuple[str, ...], list[str]]
) -> list[Line]:
    """``lines``, or, where the question says which one ("the temperature of the DS18B20") and
    an object of the result is that one (a compare's reading labelled "DS18B20"), the lines of
    that object alone: a sibling's reading ("bme280") is another thing's, and so is a line of
    the whole result beside them."""
    subject, language = question.subject, question.language
    if subject is None:
        return list(lines)
    which = [w for w in (*subject.which, *subject.of) if language.letters.search(w)]
    if not which:
        return list(lines)

    def named(line: Line) -> bool:
        around = object_words(line, texts, language)
        return bool(around) and all(is_known(w, around, language) for w in which)

    chosen = [line for line in lines if named(line)]
    return chosen or list(lines)


__all__ = [
    "names_its_readings",
    "names_thing",
    "object_words",
    "of_another_choice",
    "of_another_thing",
    "of_question",
]
