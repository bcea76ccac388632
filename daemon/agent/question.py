"""A question, parsed once per run: what it asks about, the state a yes-or-no question asks for,
its two parts when it has two, and whether it is about the skills themselves.

By English grammar alone (the word lists are :mod:`~edge_agentd.agent.english`'s), for any
skill. The run parses its question once (:attr:`AgentState.question
<edge_agentd.agent.events.AgentState.question>`); grounding and the guidance read that.

- **The subject** is the noun phrase after "what is", "which", "how many", "how warm is", "is",
  "will it", "is there", "tell me", ... up to a word that ends a noun phrase (a preposition, a
  verb of the question, a pronoun, "current" and other words that say when), with the phrase
  after an "of" that follows it ("the ID of the 1-Wire sensor") and a place after an "in"
  ("the CO2 level in the bedroom"). Its last word is its head; the words before say which one
  ("garage door" of "garage door sensor").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from edge_agentd.agent.english import (
    AND,
    ARTICLE,
    AUXILIARIES,
    CATALOGUE_HEADS,
    CATALOGUE_QUESTION,
    DETERMINERS,
    ENDS_PHRASE,
    HEAD_NOUN,
    HERE,
    IMPERATIVES,
    PAIRED,
    PLACE,
    POSSESSIVE_END,
    QUESTION_OPENING,
    SENTENCE_END,
    STATE_VERBS,
    TOKEN,
    WHEN,
)


@dataclasses.dataclass(frozen=True)
class Question:
    """A question as the loop reads it, parsed once (:meth:`parse`)."""

    text: str
    subject: Subject | None
    """The noun phrase it asks about (:func:`question_subject`)."""
    state: str | None
    """The state a yes-or-no question asks its subject to be in (:func:`asked_state`)."""
    about_catalogue: bool
    """Whether it asks about the skills themselves (:func:`about_catalogue`)."""
    parts: tuple[Question, ...] = ()
    """Its two parts when it asks two things joined by "and" (:func:`question_parts`), each
    parsed; () for a question in one part."""

    @classmethod
    def parse(cls, text: str) -> Question:
        parts = tuple(cls._one(part) for part in question_parts(text))
        return dataclasses.replace(cls._one(text), parts=parts)

    @classmethod
    def _one(cls, text: str) -> Question:
        return cls(text, question_subject(text), asked_state(text), about_catalogue(text))


MAX_PHRASE_WORDS = 6
"""The most words of a subject's phrase, and of its "of" phrase, that are judged: the head and
the words nearest it."""


@dataclasses.dataclass(frozen=True)
class Subject:
    """The noun phrase a question asks about."""

    which: tuple[str, ...]
    """The words before its head, which say which one ("garage", "door")."""
    head: str
    """Its last word ("sensor")."""
    of: tuple[str, ...] = ()
    """The phrase after an "of" that follows it ("1-Wire", "sensor" of "the ID of the 1-Wire
    sensor")."""
    where: tuple[str, ...] = ()
    """The place after an "in" that follows it, when a determiner opens the place ("bedroom" of
    "the CO2 level in the bedroom"; none of "the temperature in Fahrenheit", a unit)."""

    @property
    def words(self) -> tuple[str, ...]:
        return (*self.which, self.head, *self.of)


def _phrase(words: Sequence[str], start: int, verb_last: bool) -> tuple[list[str], int]:
    """The noun phrase from ``start``: determiners, words that say when and a possessive skipped
    ("my Pi's CPU" is "CPU"), then words to one that ends a phrase. ``verb_last``: the
    question's verb follows the phrase ("What does the probe read now?", "Is the door
    locked?"), so the phrase drops its last word, unless an "of" follows it."""
    i = start
    while i < len(words) and words[i].casefold() in DETERMINERS | WHEN:
        i += 1
    phrase: list[str] = []
    while i < len(words):
        folded = words[i].casefold()
        if folded in ENDS_PHRASE or folded in DETERMINERS or folded in WHEN:
            break
        if POSSESSIVE_END.search(folded):
            phrase.clear()
        else:
            phrase.append(words[i])
        i += 1
    before_of = i < len(words) and words[i].casefold() == "of"
    if verb_last and not before_of and len(phrase) >= 2:
        phrase.pop()
    return phrase, i


def question_subject(query: str) -> Subject | None:
    """The noun phrase the first sentence of ``query`` asks about, or None when its grammar
    names none ("How humid is it?", "On what day ...?")."""
    words = TOKEN.findall(SENTENCE_END.split(query.strip())[0])
    low = [w.casefold() for w in words]
    if not words:
        return None
    first = low[0]
    if first in IMPERATIVES:  # "Tell me the time."
        start = 2 if len(low) > 1 and low[1] in {"me", "us"} else 1
        phrase, end = _phrase(words, start, verb_last=False)
    elif first in {"what's", "what’s"} or (
        first in {"what", "which"} and len(low) > 1 and low[1] in AUXILIARIES
    ):
        start = 1 if first not in {"what", "which"} else 2
        verb = "is" if start == 1 else low[1]
        if start < len(low) and low[start] == "be":
            start += 1
        phrase, end = _phrase(words, start, verb_last=verb in {"does", "do", "did"})
    elif first in {"what", "which"}:  # "What date is it?"
        phrase, end = _phrase(words, 1, verb_last=False)
    elif first == "how" and len(low) > 2 and low[1] in {"many", "much"}:
        start = 3 if low[2] == "of" else 2
        phrase, end = _phrase(words, start, verb_last=False)
    elif first == "how" and len(low) > 3 and low[2] in AUXILIARIES:  # "How warm is the CPU?"
        # The question's verb ends it after "does" or "will" ("How long will the battery
        # last?"), not after "is" ("How full is the rain barrel?" asks about the barrel).
        phrase, end = _phrase(words, 3, verb_last=low[2] not in STATE_VERBS)
    elif first in AUXILIARIES and len(low) > 2 and low[1] in {"it", "there"}:
        # "Will it rain?", "Is there a light sensor?": with no subject of its own, what the
        # question asks about comes after the "it" or the "there".
        phrase, end = _phrase(words, 2, verb_last=False)
    elif first in AUXILIARIES:  # "Is the front door locked?"
        phrase, end = _phrase(words, 1, verb_last=True)
    else:
        return None
    if not phrase:
        return None
    of: list[str] = []
    if end < len(low) and low[end] == "of":
        of, end = _phrase(words, end + 1, verb_last=False)
    where = _place(words, low, end)
    # Each word may be scored: a phrase of hundreds of words costs only its last few.
    which = phrase[:-1][-(MAX_PHRASE_WORDS - 1) :]
    return Subject(
        tuple(which), phrase[-1], tuple(of[:MAX_PHRASE_WORDS]), tuple(where[:MAX_PHRASE_WORDS])
    )


def _place(words: Sequence[str], low: Sequence[str], at: int) -> list[str]:
    """The place an "in" at ``at`` names, when a determiner opens it: "in the bedroom", "in my
    office". A bare word after "in" is a unit or a manner ("in Fahrenheit", "in percent", "in
    total") and "in 3 days" a time: neither says which thing the question is about."""
    if at + 2 >= len(low) or low[at] not in PLACE or low[at + 1] not in DETERMINERS:
        return []
    place, _ = _phrase(words, at + 1, verb_last=False)
    if [w.casefold() for w in place] in HERE:
        return []  # "in the room" is where the asker and the device are, not another room
    return place


def asked_state(query: str) -> str | None:
    """The state a yes-or-no question asks its subject to be in, case folded: "open" of "Is the
    front door open?", "on" of "Is the heater on?", "running" of "Is the washing machine
    running?"; None for other questions ("Is there a light sensor?", "Is it raining?", "Is the
    CPU hotter than 70 °C?")."""
    words = TOKEN.findall(SENTENCE_END.split(query.strip())[0])
    low: list[str] = [w.casefold() for w in words]
    if len(low) < 3 or low[0] not in STATE_VERBS or low[1] in {"it", "there"}:
        return None
    phrase, end = _phrase(words, 1, verb_last=False)
    if end < len(low) and low[end] == "than":
        return None  # "Is the CPU hotter than 70 °C?" compares values; it names no state
    if end == len(low) - 1 and low[end] not in DETERMINERS:
        return low[end]  # "Is the heater on?": a word that ends a phrase, last
    if len(phrase) >= 2 and (end == len(low) or low[end] not in AUXILIARIES):
        return low[end - 1]  # "Is the front door open (at night)?"
    return None


def head_opening(query: str) -> str | None:
    """What a what, which or how-many question says before its head noun ("What are the ");
    None for other questions."""
    match = HEAD_NOUN.match(query)
    return query[: match.start(1)] if match else None


def head_noun(query: str) -> str | None:
    """The noun a what, which or how-many question asks for, case folded; None for other
    questions."""
    match = HEAD_NOUN.match(query)
    return match.group(1).casefold() if match else None


def head_noun_forms(query: str) -> frozenset[str]:
    """The question's head noun (:func:`head_noun`) with its plural and singular; empty when
    it has none."""
    noun = head_noun(query)
    if noun is None:
        return frozenset()
    return frozenset({noun, noun.removesuffix("s"), f"{noun}s"})


MIN_PART_WORDS = 2


def question_parts(query: str) -> list[str]:
    """The two parts of a question joined by "and", each of at least MIN_PART_WORDS words and
    written as a question of its own; [] for a question in one part ("between ... and"), or in
    more than two. A second part that is only a noun ("What are the CPU temperature and the
    humidity?") takes the first part's opening: "What are the humidity?"."""
    parts = AND.split(" ".join(query.split()))
    if len(parts) != 2 or any(len(part.split()) < MIN_PART_WORDS for part in parts):
        return []
    first, second = parts
    if PAIRED.search(first) and not QUESTION_OPENING.match(second):
        return []  # "the difference between the CPU and the probe" is one thing asked
    opening, article = head_opening(first), ARTICLE.match(second)
    if opening is not None and article is not None and head_opening(second) is None:
        second = opening + second[article.end() :]
    return [part[:1].upper() + part[1:] for part in (first, second)]


def about_catalogue(query: str) -> bool:
    """Whether ``query`` asks about the skills themselves ("What skills do you have?", "What
    can you do?"): the catalogue in the system prompt answers it."""
    if CATALOGUE_QUESTION.match(query):
        return True
    subject = question_subject(query)
    return subject is not None and subject.head.casefold() in CATALOGUE_HEADS



__all__ = [
    "MAX_PHRASE_WORDS",
    "MIN_PART_WORDS",
    "Question",
    "Subject",
    "about_catalogue",
    "asked_state",
    "head_noun",
    "head_noun_forms",
    "head_opening",
    "question_parts",
    "question_subject",
]
