"""Lines a question names by what their key holds, beyond its words (docs/design.md, "Bound to
the question"):

- **An amount glued into a key** (``load_average 5min``, ``rain 24h``, ``cpu 2ghz``): named by
  the question's same amount however it writes it ("over 5 minutes", "the 5-minute ...",
  "5 min"), and by no other number: "over 10 minutes" of a result with only 1, 5 and 15
  names none of them, and the answer is "I cannot tell" (:func:`of_amounts`).
- **A key word glued from two of the question's words**, in either order: ``weekday`` of "What
  day of the week ...?", its head and its of-word (:func:`compound_lines`).
- **A duration**, asked "How long ...?" (:func:`quality_lines`): the lines holding one (a
  number in a time unit, a text of amounts, :func:`~edge_agentd.agent.amounts.is_duration`),
  the text where an object writes its duration out ("5 d 7 h 13 min" beside its seconds).

Every word is the question's, the result's or the language's; nothing here knows a skill.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from edge_agentd.agent.amounts import amounts_in, is_duration, key_amounts
from edge_agentd.agent.claims import quality_nouns
from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import Line
from edge_agentd.agent.vocabulary import is_known, known_words
from edge_agentd.guidance.labels import prefix


def of_amounts(question: Question, lines: Sequence[Line]) -> list[Line]:
    """``lines``, or, where some of them glue an amount into their key and the question writes
    an amount, those whose key holds one the question writes: none when no key does."""
    language = question.language
    keyed = {id(line): key_amounts(line.name, language) for line in lines}
    if not any(keyed.values()):
        return list(lines)
    asked = set(amounts_in(question.text, language))
    if not asked:
        return list(lines)
    return [line for line in lines if keyed[id(line)] & asked]


def compound_lines(question: Question, lines: Sequence[Line]) -> list[Line]:
    """Those of ``lines`` whose own key has a word glued from two words of the question's
    subject that stand together (the head and its of-word, a word before the head and the
    head), in either order: ``weekday`` of "day of the week"."""
    subject, language = question.subject, question.language
    if subject is None:
        return []
    said = [w for w in (*subject.which, subject.head) if language.letters.fullmatch(w)]
    pairs = list(itertools.pairwise(said))
    if subject.of and language.letters.fullmatch(subject.of[0]):
        pairs.append((subject.head, subject.of[0]))
    glued = set()
    for first, second in pairs:
        for a, b in itertools.product(language.forms(first), language.forms(second)):
            glued |= {f"{a}{b}", f"{b}{a}"}
    found = []
    for line in lines:
        key = line.name.split()[-1] if line.name else ""
        if any(language.forms(word) & glued for word in language.letters.findall(key.casefold())):
            found.append(line)
    return found


def quality_lines(question: Question, lines: Sequence[Line]) -> list[Line]:
    """Those of ``lines`` the question's "how <adjective>" asks for: a duration, asked as one
    (the written-out text of an object that writes one, else each), or a line whose name the
    adjective or a noun of its quantity names ("charged" and ``state_of_charge``)."""
    subject, language = question.subject, question.language
    quality = subject.quality if subject is not None else None
    if quality is None:
        return []
    if quality.casefold() in language.asks_duration:
        durations = [line for line in lines if is_duration(line.node, line.name, language)]
        written = {prefix(line) for line in durations if isinstance(line.node, str)}
        durations = [x for x in durations if isinstance(x.node, str) or prefix(x) not in written]
        if durations:
            return durations
    asked = (quality, *quality_nouns(quality, language))
    return [
        line
        for line in lines
        if any(is_known(w, known_words([line.name], [], language), language) for w in asked)
    ]


__all__ = ["compound_lines", "of_amounts", "quality_lines"]
