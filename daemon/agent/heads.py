"""A question's head noun and its two parts, by a language's grammar alone (docs/design.md,
"Grounding"): what a what, which or how-many question asks for ("What date is it?": "date"), and
the two questions a question joined by "and" asks. Read by :mod:`~edge_agentd.agent.question`,
which names them too."""

from __future__ import annotations

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.language import Language


def head_opening(query: str, language: Language = ENGLISH) -> str | None:
    """What a what, which or how-many question says before its head noun ("What are the ");
    None for other questions."""
    match = language.head_noun.match(query)
    return query[: match.start(1)] if match else None


def head_noun(query: str, language: Language = ENGLISH) -> str | None:
    """The noun a what, which or how-many question asks for, case folded; None for other
    questions."""
    match = language.head_noun.match(query)
    return match.group(1).casefold() if match else None


def head_noun_forms(query: str, language: Language = ENGLISH) -> frozenset[str]:
    """The question's head noun (:func:`head_noun`) with its plural and singular; empty when
    it has none."""
    noun = head_noun(query, language)
    return frozenset() if noun is None else frozenset(language.forms(noun))


MIN_PART_WORDS = 2


def question_parts(query: str, language: Language = ENGLISH) -> list[str]:
    """The two parts of a question joined by "and", each of at least MIN_PART_WORDS words and
    written as a question of its own; [] for a question in one part ("between ... and"), or in
    more than two. A second part that is only a noun ("What are the CPU temperature and the
    humidity?") takes the first part's opening: "What are the humidity?"."""
    parts = language.and_.split(" ".join(query.split()))
    if len(parts) != 2 or any(len(part.split()) < MIN_PART_WORDS for part in parts):
        return []
    first, second = parts
    if language.paired.search(first) and not language.question_opening.match(second):
        return []  # "the difference between the CPU and the probe" is one thing asked
    opening, article = head_opening(first, language), language.article.match(second)
    if opening is not None and article is not None and head_opening(second, language) is None:
        second = opening + second[article.end() :]
    return [part[:1].upper() + part[1:] for part in (first, second)]


__all__ = [
    "MIN_PART_WORDS",
    "head_noun",
    "head_noun_forms",
    "head_opening",
    "question_parts",
]
