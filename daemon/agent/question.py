"""A question, parsed once per run: what it asks about, the state a yes-or-no question asks for,
its two parts when it has two, and whether it is about the skills themselves.

By a language's grammar alone (its word lists and patterns are one
:class:`~edge_agentd.agent.language.Language`, English by default), for any skill. The run
parses its question once (:attr:`AgentState.question
<edge_agentd.agent.events.AgentState.question>`); grounding and the guidance read that, or,
in another language, read its text again in theirs (:func:`in_language`).

- **The subject** is the noun phrase after "what is", "which", "how many", "how warm is", "is",
  "will it", "is there", "tell me", ... up to a word that ends a noun phrase (a preposition, a
  verb of the question, a pronoun, "current" and other words that say when), with the phrase
  after an "of" that follows it ("the ID of the 1-Wire sensor") and a place after an "in"
  ("the CO2 level in the bedroom"). Its last word is its head; the words before say which one
  ("garage door" of "garage door sensor"); a possessive's owner is kept ("car" of "the car's
  battery"), and a "how" question's adjective ("charged").
- **Other shapes** are read as their plain form (:func:`normalised`): a request or a polite
  form cut off ("Could you check ...", "Would you mind telling me ...", "I'd like to know
  ..."), a command's verb too ("Please read the DS18B20 probe."), a fragment is its own
  subject ("Humidity?", "CPU temp?"), and "whether"/"if" turned into the question ("Tell me
  whether the garage door is open": "is the garage door open"). "How loud is it?" asks about
  the quality: its subject is "loud".
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from edge_agentd.agent.clauses import normalised, opens_comparison
from edge_agentd.agent.clauses import noun_phrase as _phrase
from edge_agentd.agent.clauses import plain_form as _normalised
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.heads import (
    MIN_PART_WORDS,
    head_noun,
    head_noun_forms,
    head_opening,
    question_parts,
)
from edge_agentd.agent.language import Language


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
    predicate: tuple[str, ...] = ()
    """What a yes-or-no question asks its subject to be, as it writes it ("plugged", "in" of
    "Is the car plugged in?"; "open" of "Is the front door open?"); () for other questions."""
    exists: bool = False
    """Whether it asks whether its subject is there (:func:`asks_existence`)."""
    language: Language = dataclasses.field(default=ENGLISH, compare=False, repr=False)
    """The language it was read in: what reads it further (grounding, the sentences said of
    it) reads it in the same."""

    @classmethod
    def parse(cls, text: str, language: Language = ENGLISH) -> Question:
        parts = tuple(cls._one(part, language) for part in question_parts(text, language))
        return cls._one(text, language, parts)

    @classmethod
    def _one(cls, text: str, language: Language, parts: tuple[Question, ...] = ()) -> Question:
        # Its plain form and words are read once, for its subject, state and predicate alike.
        plain, commanded = _normalised(text, language)
        words = language.token.findall(plain)
        subject = _subject(words, commanded, language)
        state = _state(words, language)
        return cls(
            text,
            subject,
            state,
            _about_catalogue(text, subject, language),
            parts=parts,
            predicate=_predicate(words, state, language),
            exists=_exists(words, state, language),
            language=language,
        )


@functools.lru_cache(maxsize=32)
def _parsed(text: str, language: Language) -> Question:
    return Question.parse(text, language)


def in_language(question: Question, language: Language) -> Question:
    """``question`` as ``language`` reads it: itself when it was read in it, else its text read
    anew (once for a few recent texts)."""
    return question if question.language is language else _parsed(question.text, language)


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
    owner: tuple[str, ...] = ()
    """Whose it is, before a possessive ("car" of "the car's battery"): like an "of" phrase of
    one word, it may name the thing when the head does not, and is not required to."""
    doer: tuple[str, ...] = ()
    """What the question's own verb is of, after the subject ("solar panels" of "How much power
    are the solar panels producing?"): it says which one, as the words before the head do."""
    quality: str | None = None
    """The adjective a "how" question asks about ("charged" of "How charged is the car's
    battery?", "loud" of "How loud is it?"): the line that answers is the one whose own name
    starts as it does ("state_of_charge"), where one does."""

    @property
    def words(self) -> tuple[str, ...]:
        return (*self.which, self.head, *self.of)


def question_subject(query: str, language: Language = ENGLISH) -> Subject | None:
    """The noun phrase the first sentence of ``query`` asks about, or None when its grammar
    names none ("Does it have a humidity sensor?", "On what day ...?")."""
    text, commanded = _normalised(query, language)
    return _subject(language.token.findall(text), commanded, language)


def _subject(words: Sequence[str], commanded: bool, language: Language) -> Subject | None:
    """:func:`question_subject` of the words of a question's plain form."""
    low = [w.casefold() for w in words]
    if len(words) > 2 and low[-1] in language.asks_state:
        # "What is the washing machine doing?": the verb asks its state; the machine is the thing.
        words, low = words[:-1], low[:-1]
    if not words:
        return None
    la = language
    first = low[0]
    owner: list[str] = []
    quality = None
    how = first == la.how
    if how and len(low) > 2 and low[1] not in la.how_many:
        quality = words[1]  # "How charged is the car's battery?"
    if how and quality and len(low) > 2 and low[2] in la.state_verbs and _about_it(low, la):
        # "How loud is it (in the room)?": no thing named, the quality is what is asked about.
        where = _place(words, low, 4, la)
        return Subject((), quality, where=tuple(where[:MAX_PHRASE_WORDS]), quality=quality)
    if first in la.imperatives:  # "Tell me the time."
        start = 2 if len(low) > 1 and low[1] in la.recipients else 1
        phrase, end = _phrase(words, start, False, la, owner)
    elif first in la.what_is or (first in la.what and len(low) > 1 and low[1] in la.auxiliaries):
        start = 1 if first not in la.what else 2
        # After "what's" the verb is "is"; after "what does", the question's verb comes last.
        verb_last = start == 2 and low[1] in la.do_forms
        if start < len(low) and low[start] == la.be:
            start += 1
        phrase, end = _phrase(words, start, verb_last, la, owner)
    elif first in la.when_asks or (first in la.since and len(low) > 1 and low[1] in la.when_asks):
        # "When was the window closed?", "Since when has the door been open?", and "since when
        # the door has been open" inside a sentence: what comes after the auxiliary, if any.
        opens = 1 if first in la.when_asks else 2
        aux = low[opens] if opens < len(low) and low[opens] in la.auxiliaries else None
        phrase, end = _phrase(words, opens + (aux is not None), False, la, owner)
        # The question's own verb ends it after "did", or as a participle after "was": "When
        # was the window opened?"; "When is high tide?" ends with its thing.
        participle = la.participle is not None and la.participle.search(
            phrase[-1] if phrase else ""
        )
        if aux is not None and len(phrase) >= 2 and (aux in la.do_forms or participle):
            phrase.pop()
    elif first in la.what:  # "What date is it?"
        phrase, end = _phrase(words, 1, False, la, owner)
    elif how and len(low) > 2 and low[1] in la.how_many:
        start = 3 if low[2] == la.of else 2
        phrase, end = _phrase(words, start, False, la)
    elif how and len(low) > 3 and low[2] in la.auxiliaries:  # "How warm is the CPU?"
        # The question's verb ends it after "does" or "will" ("How long will the battery
        # last?"), not after "is" ("How full is the rain barrel?" asks about the barrel).
        phrase, end = _phrase(words, 3, low[2] not in la.state_verbs, la, owner)
    elif (having := _having_at(low, la)) is not None:
        # "Does this device have a pressure sensor?": what it asks about follows the verb.
        phrase, end = _phrase(words, having + 1, False, la)
    elif first in la.auxiliaries and len(low) > 2 and low[1] in {la.it, la.there}:
        # "Will it rain?", "Is there a light sensor?": with no subject of its own, what the
        # question asks about comes after the "it" or the "there".
        phrase, end = _phrase(words, 2, False, la)
    elif first in la.auxiliaries:  # "Is the front door locked?"
        phrase, end = _phrase(words, 1, True, la, owner)
    elif first not in la.ends_phrase and (commanded or not set(low) & la.auxiliaries):
        # A fragment, or what a command asks for: "Humidity?", "CPU temp?", "The garage door?",
        # "(Please read) the DS18B20 probe." The whole phrase is the subject, when nothing but
        # an "of" or a place follows it: "Compare them" is a command the grammar cannot read.
        phrase, end = _phrase(words, 0, False, la, owner)
        after = la.place | la.when_after | {la.of}
        if end < len(low) and low[end] not in after and not commanded:
            return None
    else:
        return None
    compared = la.above | la.below
    if len(phrase) == 1 and phrase[0].casefold() in compared and low[end : end + 1] == [la.than]:
        # "Is more than half of the memory in use?" asks about the memory.
        at = next((i for i in range(end + 1, end + 5) if low[i : i + 1] == [la.of]), None)
        if at is not None:
            phrase, end = _phrase(words, at + 1, first in la.auxiliaries, la, owner)
    if not phrase:
        return None
    of: list[str] = []
    if end < len(low) and low[end] == la.of:
        of, end = _phrase(words, end + 1, False, la)
    doer = [] if owner else _doer(words, low, end, la)
    where = _place(words, low, end, la)
    # Each word may be scored: a phrase of hundreds of words costs only its last few.
    which = phrase[:-1][-(MAX_PHRASE_WORDS - 1) :]
    return Subject(
        tuple(which),
        phrase[-1],
        tuple(of[:MAX_PHRASE_WORDS]),
        tuple(where[:MAX_PHRASE_WORDS]),
        owner=tuple(owner[-MAX_PHRASE_WORDS:]),
        doer=tuple(doer[-MAX_PHRASE_WORDS:]),
        quality=quality,
    )


def _having_at(low: Sequence[str], language: Language) -> int | None:
    """Where the verb of a question that asks whether something is there stands: first ("(Do
    you) have a CO2 sensor?") or after "does" and what it asks of ("Does this device have
    ..."); None for other questions."""
    if low and low[0] in language.having:
        return 0
    if not low or low[0] not in language.do_forms:
        return None
    return next((i for i, w in enumerate(low[1:5], 1) if w in language.having), None)


def asks_existence(query: str, language: Language = ENGLISH) -> bool:
    """Whether ``query`` asks whether something is there: "Is there mail?", "Does this device
    have a pressure sensor?", "Is a humidity sensor connected?" (a state of the language's
    :attr:`~edge_agentd.agent.language.Language.presence`)."""
    words = language.token.findall(normalised(query, language))
    return _exists(words, _state(words, language), language)


def _exists(words: Sequence[str], state: str | None, language: Language) -> bool:
    low = [w.casefold() for w in words]
    if len(low) > 2 and low[0] in language.state_verbs and low[1] == language.there:
        return True
    if len(low) > 1 and _having_at(low, language) is not None:
        return True
    return state in language.presence


def _doer(words: Sequence[str], low: Sequence[str], end: int, language: Language) -> list[str]:
    """The noun phrase whose verb the question asks with, when one follows the subject at
    ``end``: after an auxiliary ("How much power are the solar panels producing?") or before
    one ("how much power the solar panels are producing"). A determiner must open it, so a verb
    ("is left") or "it" is never taken for one; the device itself names no other thing."""
    la = language
    helping = la.state_verbs | la.do_forms  # "have" after the subject is a verb of its own
    if end + 1 < len(low) and low[end] in helping and low[end + 1] in la.determiners:
        doer, _ = _phrase(words, end + 1, True, la)
    elif end < len(low) and low[end] in la.determiners:
        doer, after = _phrase(words, end, False, la)
        if after >= len(low) or low[after] not in la.auxiliaries:
            return []
    else:
        return []
    return [w for w in doer if w.casefold() not in la.itself]


def _about_it(low: Sequence[str], language: Language) -> bool:
    """Whether a "how ... is" question is about "it" alone, at most a place or a time after it
    ("How loud is it in the room?"), not "it" before what it stands for ("How long is it until
    Christmas?")."""
    if len(low) < 4 or low[3] != language.it:
        return False
    rest = low[4:]
    return not rest or rest[0] in language.place | language.when | language.when_after


def _place(words: Sequence[str], low: Sequence[str], at: int, language: Language) -> list[str]:
    """The place an "in" at ``at`` names, when a determiner opens it: "in the bedroom", "in my
    office". A bare word after "in" is a unit or a manner ("in Fahrenheit", "in percent", "in
    total") and "in 3 days" a time: neither says which thing the question is about."""
    if at + 2 >= len(low) or low[at] not in language.place:
        return []
    if low[at + 1] not in language.determiners:
        return []
    place, _ = _phrase(words, at + 1, False, language)
    if tuple(w.casefold() for w in place) in language.here:
        return []  # "in the room" is where the asker and the device are, not another room
    return place


def asked_state(query: str, language: Language = ENGLISH) -> str | None:
    """The state a yes-or-no question asks its subject to be in, case folded: "open" of "Is the
    front door open?", "on" of "Is the heater on?", "running" of "Is the washing machine
    running?"; None for other questions ("Is there a light sensor?", "Is it raining?", "Is the
    CPU hotter than 70 °C?")."""
    return _state(language.token.findall(normalised(query, language)), language)


def _state(words: Sequence[str], language: Language) -> str | None:
    low = [w.casefold() for w in words]
    dummies = {language.it, language.there}
    if len(low) < 3 or low[0] not in language.state_verbs or low[1] in dummies:
        return None
    phrase, end = _phrase(words, 1, False, language)
    if (end < len(low) and low[end] == language.than) or opens_comparison(words, end, language):
        return None  # "Is the CPU hotter than 70 °C?", "... above 25 °C?": no state named
    if end == len(low) - 1 and low[end] not in language.determiners:
        return low[end]  # "Is the heater on?": a word that ends a phrase, last
    if len(phrase) >= 2 and (end == len(low) or low[end] not in language.auxiliaries):
        return low[end - 1]  # "Is the front door open (at night)?"
    return None


def asked_predicate(query: str, language: Language = ENGLISH) -> tuple[str, ...]:
    """What a yes-or-no question asks its subject to be, its words as written: its state
    (:func:`asked_state`), with the participle before a state that ends a phrase ("plugged in"
    of "Is the car plugged in?", "switched on"); () for other questions."""
    words = language.token.findall(normalised(query, language))
    return _predicate(words, _state(words, language), language)


def _predicate(words: Sequence[str], state: str | None, language: Language) -> tuple[str, ...]:
    if state is None:
        return ()
    low = [w.casefold() for w in words]
    phrase, end = _phrase(words, 1, False, language)
    if end == len(low) - 1 and low[end] == state:
        return (*phrase[-1:], words[end]) if len(phrase) >= 2 else (words[end],)
    return (words[end - 1],)


def asks_about_many(query: str, language: Language = ENGLISH) -> bool:
    """Whether ``query`` asks about many things at once ("How warm is it everywhere?", "What
    do all the sensors read?"), so that one sentence about one of them is not its answer."""
    return any(word.casefold() in language.every for word in language.token.findall(query))


def about_catalogue(query: str, language: Language = ENGLISH) -> bool:
    """Whether ``query`` asks about the skills themselves ("What skills do you have?", "What
    can you do?"): the catalogue in the system prompt answers it."""
    return _about_catalogue(query, question_subject(query, language), language)


def _about_catalogue(query: str, subject: Subject | None, language: Language) -> bool:
    if language.catalogue_question.match(query):
        return True
    return subject is not None and subject.head.casefold() in language.catalogue_heads


__all__ = [
    "MAX_PHRASE_WORDS",
    "MIN_PART_WORDS",
    "Question",
    "Subject",
    "about_catalogue",
    "asked_predicate",
    "asked_state",
    "asks_about_many",
    "asks_existence",
    "head_noun",
    "head_noun_forms",
    "head_opening",
    "in_language",
    "normalised",
    "question_parts",
    "question_subject",
]
