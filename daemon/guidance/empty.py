"""An empty list is an answer: "Which sensors are connected?" of ``{"sensors": []}`` is
"There are no sensors.", where no line of the result states a value."""

from __future__ import annotations

from typing import Any

from edge_agentd.agent.language import Language
from edge_agentd.agent.question import Question
from edge_agentd.agent.vocabulary import is_known, known_words
from edge_agentd.guidance.fitting import MAX_STATE_WORDS
from edge_agentd.guidance.labels import key_words


def none_listed(question: Question, result: Any, call_words: frozenset[str]) -> list[str]:
    """ "There are no <things>." for each empty list of ``result`` (at its top) whose key the
    question's head names, where the call that gave it (``call_words``, its arguments) asked
    for nothing the question does not: a listing narrowed to one quantity says nothing of the
    things it left out."""
    language = question.language
    if language.said_none is None:
        return []
    template = language.said_none
    return [template.format(label=label) for label in _empty_lists(question, result, call_words)]


def none_there(question: Question, result: Any, call_words: frozenset[str]) -> list[str]:
    """ "No, there are no <things>." to a yes-or-no question about what things of an empty list
    (as :func:`none_listed` finds them) are or do: none is connected where there are none.
    Not to one that says "not": "Are the sensors not connected?" would be answered "No"."""
    language = question.language
    asked = [w.casefold() for w in language.token.findall(question.text)]
    suffix = language.negation_suffix
    if call_words or any(w in language.negations or (suffix and w.endswith(suffix)) for w in asked):
        return []
    if isinstance(result, dict) and any(_echoes(v, asked, language) for v in result.values()):
        return []  # ``"quantity": "humidity"``: a listing filtered by a word asked
    return [
        language.said_none_there.format(
            answer=language.no, be=language.verb(label.split()), phrase=label
        )
        for label in _empty_lists(question, result, call_words)
    ]


def _echoes(value: Any, asked: list[str], language: Language) -> bool:
    """Whether ``value`` is a short text of the question's own words: what a listing was
    filtered by, which may be no name the things listed have."""
    if not isinstance(value, str):
        return False
    found = [w.casefold() for w in language.token.findall(value)]
    return 0 < len(found) <= MAX_STATE_WORDS and all(language.forms(w) & set(asked) for w in found)


def _empty_lists(question: Question, result: Any, call_words: frozenset[str]) -> list[str]:
    """The labels of the empty lists of ``result`` that :func:`none_listed` says none of."""
    subject, language = question.subject, question.language
    if subject is None or not isinstance(result, dict):
        return []
    asked = known_words([question.text], [], language)
    if any(not is_known(word, asked, language) for word in call_words):
        return []
    labels = []
    for key, value in result.items():
        words = key_words(str(key), language)
        # A list of things, named by a plural ("sensors"); not one of values in a unit
        # (``level_percent``), which holds no things to be none of.
        things = bool(words) and language.plural(words[-1])
        things = things and words[-1].casefold() not in language.unit_suffixes
        named = is_known(subject.head, known_words([str(key)], [], language), language)
        if value == [] and things and named:
            labels.append(" ".join(words))
    return labels


__all__ = ["none_listed", "none_there"]
