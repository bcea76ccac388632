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

from edge_agentd.agent.english import ENGLISH
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
    quality: str | None = None
    """The adjective a "how" question asks about ("charged" of "How charged is the car's
    battery?", "loud" of "How loud is it?"): the line that answers is the one whose own name
    starts as it does ("state_of_charge"), where one does."""

    @property
    def words(self) -> tuple[str, ...]:
        return (*self.which, self.head, *self.of)


def _phrase(
    words: Sequence[str],
    start: int,
    verb_last: bool,
    language: Language,
    owner: list[str] | None = None,
) -> tuple[list[str], int]:
    """The noun phrase from ``start``: determiners, words that say when and a possessive skipped
    ("my Pi's CPU" is "CPU", its owner "Pi" put in ``owner``), then words to one that ends a
    phrase. ``verb_last``: the question's verb follows the phrase ("What does the probe read
    now?", "Is the door locked?"), so the phrase drops its last word, unless an "of" follows
    it."""
    skipped = language.determiners | language.when
    i = start
    while i < len(words) and words[i].casefold() in skipped:
        i += 1
    phrase: list[str] = []
    while i < len(words):
        folded = words[i].casefold()
        if folded in language.ends_phrase or folded in skipped:
            break
        if language.possessive_end.search(folded):
            if owner is not None:
                owner[:] = [*phrase, language.possessive_end.sub("", words[i])]
            phrase.clear()
        else:
            phrase.append(words[i])
        i += 1
    before_of = i < len(words) and words[i].casefold() == language.of
    if verb_last and not before_of and len(phrase) >= 2:
        phrase.pop()
    return phrase, i


def normalised(query: str, language: Language = ENGLISH) -> str:
    """The first sentence of ``query`` as a question or a command the grammar reads: a request
    or a polite form cut off ("Could you check the garage temperature?" reads "the garage
    temperature", "Would you mind telling me ..." what follows), a yes-or-no question inside
    a sentence turned into one ("Tell me whether the garage door is open" reads "is the garage
    door open"), and "how warm the CPU is" into "how warm is the CPU"."""
    return _normalised(query, language)[0]


def _normalised(query: str, language: Language) -> tuple[str, bool]:
    """:func:`normalised`, and whether a command or a request was cut off (what is left is then
    what it asks for, whatever verb it holds)."""
    text = language.sentence_end.split(query.strip())[0]
    commanded = False
    for _ in range(3):  # "Please, could you tell me ...": each opening cut in turn
        before = text
        text = language.please.sub("", text)
        for opening in (language.request.match(text), language.imperative_forms.match(text)):
            if opening:
                text, commanded = text[opening.end() :], True
                break
        if text == before:
            break
    words = language.token.findall(text)
    low = [w.casefold() for w in words]
    auxiliaries = language.auxiliaries
    if low and low[0] in language.embedded:
        # "whether the garage door is open": its verb goes first, as the question asks it.
        verb = next((i for i, w in enumerate(low[1:], 1) if w in auxiliaries), None)
        if verb is not None:
            return " ".join([words[verb], *words[1:verb], *words[verb + 1 :]]), False
    how = len(low) > 3 and low[0] == language.how and low[1] not in language.how_many
    if how and low[2] not in auxiliaries and low[-1] in auxiliaries:
        # "how warm the CPU is": the clause's verb, last, is the question's.
        return " ".join([*words[:2], words[-1], *words[2:-1]]), False
    if low and (low[0] in language.question_words or low[0] in auxiliaries):
        commanded = False  # "(Do you know) what time it is": a question, read as one
    return text, commanded


def question_subject(query: str, language: Language = ENGLISH) -> Subject | None:
    """The noun phrase the first sentence of ``query`` asks about, or None when its grammar
    names none ("Does it have a humidity sensor?", "On what day ...?")."""
    text, commanded = _normalised(query, language)
    return _subject(language.token.findall(text), commanded, language)


def _subject(words: Sequence[str], commanded: bool, language: Language) -> Subject | None:
    """:func:`question_subject` of the words of a question's plain form."""
    low = [w.casefold() for w in words]
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
    elif first in la.what:  # "What date is it?"
        phrase, end = _phrase(words, 1, False, la, owner)
    elif how and len(low) > 2 and low[1] in la.how_many:
        start = 3 if low[2] == la.of else 2
        phrase, end = _phrase(words, start, False, la)
    elif how and len(low) > 3 and low[2] in la.auxiliaries:  # "How warm is the CPU?"
        # The question's verb ends it after "does" or "will" ("How long will the battery
        # last?"), not after "is" ("How full is the rain barrel?" asks about the barrel).
        phrase, end = _phrase(words, 3, low[2] not in la.state_verbs, la, owner)
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
    if not phrase:
        return None
    of: list[str] = []
    if end < len(low) and low[end] == la.of:
        of, end = _phrase(words, end + 1, False, la)
    where = _place(words, low, end, la)
    # Each word may be scored: a phrase of hundreds of words costs only its last few.
    which = phrase[:-1][-(MAX_PHRASE_WORDS - 1) :]
    return Subject(
        tuple(which),
        phrase[-1],
        tuple(of[:MAX_PHRASE_WORDS]),
        tuple(where[:MAX_PHRASE_WORDS]),
        owner=tuple(owner[-MAX_PHRASE_WORDS:]),
        quality=quality,
    )


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
    if end < len(low) and low[end] == language.than:
        return None  # "Is the CPU hotter than 70 °C?" compares values; it names no state
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
    "head_noun",
    "head_opening",
    "in_language",
    "normalised",
    "question_parts",
    "question_subject",
]
