"""Phrases of the question that fill a skill's one free-text argument (docs/design.md, "Small
models", "Which words"): every short run of its words, and after the skill refused one, those
worth trying next."""

from __future__ import annotations

from collections.abc import Sequence

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.events import CallSkillAction, Event, SkillResultObservation
from edge_agentd.agent.language import Language
from edge_agentd.agent.question import Question

MAX_PHRASE_WORDS = 4


def question_phrases(query: str) -> list[str]:
    """Every run of up to four words of ``query``, without the punctuation around it."""
    words = [w.strip("?!.,;:\"'()") for w in query.split()]
    words = [w for w in words if w]
    phrases = dict.fromkeys(
        " ".join(words[i : i + n])
        for n in range(1, MAX_PHRASE_WORDS + 1)
        for i in range(len(words) - n + 1)
    )
    return list(phrases)


SPECIFIC_MARGIN = 1.0
"""Nats within the likeliest phrase's score that a longer phrase holding it is taken instead."""

PHRASE_TRIES = 2
"""How many phrases of the question a skill with one free-text argument is called with, while
it refuses them, before the whole question is tried (``resolve_date`` cannot read "date" of
"What is today's date?", but can read "today's date"); or after it, for a skill that reads
sentences."""


def fresh_phrases(phrases: Sequence[str], refused: Sequence[str]) -> list[str]:
    """The phrases worth offering after a skill refused ``refused``: none that is a part of a
    refused one (a skill that cannot read "10 days" cannot read "10"). The model's choice among
    them is made after the skill's refusal, which says what it reads."""

    return [p for p in phrases if not any(_within(p, r) for r in refused)]


def which_phrase(question: Question, argument: str) -> str | None:
    """The words that say which one, when the question's thing is what the argument is named
    for: "back" of "Is the back door closed?" for an argument ``door``. A skill that takes the
    door's name gets the name the question gives, not a phrase the model finds likelier
    ("closed")."""
    subject = question.subject
    if subject is None or not subject.which:
        return None
    named = question.language.forms(subject.head) & question.language.forms(argument)
    return " ".join(subject.which) if named else None


def phrases_to_try(
    query: str,
    refused: Sequence[str],
    whole_first: bool = False,
    argument: str | None = None,
    language: Language = ENGLISH,
) -> list[str]:
    """The phrases a skill with one free-text argument may be called with next, after it
    refused ``refused``: fresh ones (:func:`fresh_phrases`) up to PHRASE_TRIES, then the whole
    question, once. A skill that reads a thing inside a text (``resolve_date`` finds "christmas
    eve this year" in a sentence) may read it there: the likeliest phrases of "What day of the
    week is Christmas Eve this year?" can be "What day of the" and "day of the week". With
    ``whole_first`` (a skill that reads sentences) the whole question comes first, then fresh
    phrases up to PHRASE_TRIES: a phrase can mean another thing than the question ("tomorrow"
    of "the day after tomorrow"). Otherwise the phrase that names the ``argument``'s thing
    (:func:`which_phrase`) comes first and alone, until the skill refuses it."""
    whole = " ".join(query.split())
    named = which_phrase(Question.parse(query, language), argument) if argument else None
    if named and not whole_first and not any(_within(named, r) for r in refused):
        return [named]  # the name the question gives the argument's thing (which_phrase)
    if whole_first:
        if whole and whole not in refused:
            return [whole]
        # Every phrase is a part of the whole question: only those refused alone are spent,
        # and the whole itself (a short question is one of its own phrases) is not offered.
        alone = [r for r in refused if r != whole]
        if len(alone) >= PHRASE_TRIES:
            return []
        same = whole.strip("?!.,;:\"'()").casefold()
        fresh = fresh_phrases(question_phrases(query), alone)
        return [p for p in fresh if p.casefold() != same]
    if len(refused) < PHRASE_TRIES:
        return fresh_phrases(question_phrases(query), refused)
    return [whole] if whole and len(refused) == PHRASE_TRIES and whole not in refused else []


def spent(skill_name: str, text_argument: str | None, events: Sequence[Event]) -> bool:
    """Whether a skill whose arguments the run fills is not to be called again: it was called
    and answered, or (its arguments the model's own) called at all, or, filled with phrases of
    the question, called more than PHRASE_TRIES times, while it refused them."""
    calls = [e for e in events if isinstance(e, CallSkillAction) and e.skill_name == skill_name]
    if not calls:
        return False
    if text_argument is None:
        return True
    answered = any(
        isinstance(e, SkillResultObservation) and e.skill_name == skill_name for e in events
    )
    return answered or len(calls) > PHRASE_TRIES


def _within(inner: str, outer: str) -> bool:
    """Whether ``inner`` is ``outer`` or a run of its words."""
    return f" {inner.casefold()} " in f" {outer.casefold()} "


def likeliest_phrase(phrases: Sequence[str], scores: Sequence[float]) -> str:
    """The likeliest of ``phrases``, or a longer one that holds it and is nearly as likely
    (within :data:`SPECIFIC_MARGIN`): a shorter phrase is likelier for being short, and the
    words it leaves out ("next" of "next Friday", "1" of "1 January 2000") change what it means.
    A refused phrase costs a call; one that says more reads the question as it was asked."""
    best = max(range(len(phrases)), key=scores.__getitem__)
    floor = scores[best] - SPECIFIC_MARGIN
    while True:
        wider = [
            i
            for i in range(len(phrases))
            if scores[i] >= floor
            and len(phrases[i]) > len(phrases[best])
            and _within(phrases[best], phrases[i])
        ]
        if not wider:
            return phrases[best]
        best = max(wider, key=scores.__getitem__)


__all__ = [
    "MAX_PHRASE_WORDS",
    "PHRASE_TRIES",
    "SPECIFIC_MARGIN",
    "fresh_phrases",
    "likeliest_phrase",
    "phrases_to_try",
    "question_phrases",
    "spent",
]
