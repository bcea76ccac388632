"""An empty list is an answer: "Which sensors are connected?" of ``{"sensors": []}`` is
"There are no sensors.", where no line of the result states a value."""

from __future__ import annotations

from typing import Any

from edge_agentd.agent.question import Question
from edge_agentd.agent.vocabulary import is_known, known_words
from edge_agentd.guidance.labels import key_words


def none_listed(question: Question, result: Any, call_words: frozenset[str]) -> list[str]:
    """ "There are no <things>." for each empty list of ``result`` (at its top) whose key the
    question's head names, where the call that gave it (``call_words``, its arguments) asked
    for nothing the question does not: a listing narrowed to one quantity says nothing of the
    things it left out."""
    subject, language = question.subject, question.language
    if subject is None or not isinstance(result, dict) or language.said_none is None:
        return []
    asked = known_words([question.text], [], language)
    if any(not is_known(word, asked, language) for word in call_words):
        return []
    said = []
    for key, value in result.items():
        words = key_words(str(key), language)
        # A list of things, named by a plural ("sensors"); not one of values in a unit
        # (``level_percent``), which holds no things to be none of.
        things = bool(words) and language.plural(words[-1])
        things = things and words[-1].casefold() not in language.unit_suffixes
        named = is_known(subject.head, known_words([str(key)], [], language), language)
        if value == [] and things and named:
            said.append(language.said_none.format(label=" ".join(words)))
    return said


__all__ = ["none_listed"]
