"""A number the question writes that the evidence does not state: "What weekday will it be in
10 days?" after a read of the clock asks about another day than the clock's. No sentence of
that evidence answers it: its "The weekday is Monday." is true of today, and wrong of the day
asked. A number compared with ("warmer than 40 °C", the language's ``threshold``) is the
comparison's, not the thing's. The engine offers no sentence, and grounding refuses an
answer, while one is unstated.

What states a number: a result's numeric value, an amount its key glues in (``15min``), a
number that is a word or a date's part in its texts ("bedroom 2", "1976-07-04"), and the call's
own words (its arguments:
"in 10 days" passed to a skill that reads it). Built from the question and the evidence alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from edge_agentd.agent.question import Question

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_DATE_PARTS = re.compile(r"[\s/-]+")
MAX_WALK = 2000
"""The most values of one result read for its numbers: a huge result states what its first
ones do."""


def unstated_number(
    question: Question, results: Sequence[Any], called: Sequence[Iterable[str]]
) -> str | None:
    """The first number ``question`` (of one sentence) writes as a word of its own that neither
    ``results`` nor the words of the calls that gave them (``called``) state, or None."""
    language = question.language
    sentences = [t for t in language.sentence_end.split(question.text.strip()) if t.strip()]
    if len(sentences) != 1:
        # A query of several sentences gives its own context (a trigger's reading and limit, a
        # workflow's step): its numbers are what it states, not what it asks about.
        return None
    asked = [t for t in language.token.findall(question.text) if _NUMBER.fullmatch(t)]
    compared = language.threshold.search(question.text) if language.threshold else None
    if compared is not None and _NUMBER.fullmatch(compared.group(3).lstrip("-")):
        asked = [t for t in asked if _value(t) != _value(compared.group(3))]
    if not asked:
        return None
    stated: set[float] = set()
    for result in results:
        _numbers_of(result, stated)
    for words in called:
        for word in words:
            stated.update(float(n) for n in _DIGITS.findall(str(word)))  # unsigned, as asked
    return next((t for t in asked if _value(t) not in stated), None)


def _value(token: str) -> float:
    """A number as the question writes it, without its sign (which the grammar's words drop:
    "-5 °C" is read "5")."""
    return abs(float(token.replace(",", ".")))


def _numbers_of(result: Any, stated: set[float]) -> None:
    """Adds to ``stated`` the numbers ``result`` states (see the module's docstring)."""
    stack, seen = [result], 0
    while stack and seen < MAX_WALK:
        node = stack.pop()
        seen += 1
        if isinstance(node, bool):
            continue
        if isinstance(node, int | float):
            stated.add(abs(float(node)))
        elif isinstance(node, str):
            # A date's parts are numbers it states ("1976-07-04": 4); a time of day's are not
            # words of its own ("00:10:49" states no 10 of "in 10 days").
            words = _DATE_PARTS.split(node)
            stated.update(float(w) for w in words if _DIGITS.fullmatch(w))
        elif isinstance(node, dict):
            for key, value in node.items():
                stated.update(float(n) for n in _DIGITS.findall(str(key)))
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


__all__ = ["unstated_number"]
