"""Whether the evidence knows what a question is about (docs/design.md, "Small models").

A 270M model that must state a value states one, whatever it was asked: "What is the light
level in lux?" got "The light level in lux is 41.5 %RH." and "What does the garage door sensor
read?" got a pressure. The answer is a true value, of the wrong thing: wrong with confidence. No
likelihood of the whole question tells these apart from answerable ones (a sensor skill's
description makes any "what does the ... sensor read?" likely). What does is the *subject*, the
noun phrase the question asks about ("light level", "garage door sensor"), set beside every
word the skills and their results use.

- **The subject** is found by English grammar alone: the phrase after "what is", "which",
  "how many", "how warm is", "is", "tell me", ... up to a word that ends a noun phrase (a
  preposition, a verb of the question, a pronoun, "current" and other words that say when), with
  the phrase after an "of" that follows it ("the ID of the 1-Wire sensor"). Its last word is its
  head; the words before name which one ("garage door" of "garage door sensor").
- **A word is named** by the evidence when a word of the calls made (the skill's name,
  description, examples, and what a ready call gets) or of their results (keys, texts) is it,
  its plural or singular, or begins with it or is its start (four letters at least:
  "percentage" and "used_percent"). A word is *known* when it is named, or when the model finds
  it likely there: how much likelier the question's word is after a called skill's
  description than after a description of no skill, the question before it being the same
  ("RAM" after "memory", +7 nats; "garage" after a sensor's, +0.7).
- **Cannot tell** when the head is not known at :data:`KNOWN_GAIN` and no other word of the
  subject is named ("CO2" of "CO2 level" is likely after any sensor's description, and says
  nothing of whether this device has one), or when a word that says which one is not known at
  :data:`WHICH_GAIN`: the evidence names no such thing.

Built from the question, the registry and the results alone, for any skill. The guidance then
holds the answer to begin "I cannot tell"; the model still writes it.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from edge_agent.agent.events import CallSkillAction, Event, SkillResultObservation
from edge_agent.agent.followup import content_free, first_candidate
from edge_agent.agent.protocol import ModelError, ModelHandle, ScoringUnsupported

if TYPE_CHECKING:
    from edge_agent.agent.candidates import Candidate

log = logging.getLogger(__name__)

KNOWN_GAIN = 4.0
"""Nats by which a subject word must be likelier after a called skill's description than after
no skill's to be known, when no word of the registry or results is it: on the dev half the
least for an answerable subject was 4.3 ("temperature"), the most for one no skill answers 3.0
("weather")."""
WHICH_GAIN = 2.0
"""The same, for a word that says which one ("relative" of "relative humidity", 2.9; "garage"
of "garage door sensor", 0.7): a thing named by words the evidence lacks is not one it has."""
MAX_PHRASE_WORDS = 6
"""The most words of a subject's phrase, and of its "of" phrase, that are judged: the head and
the words nearest it."""


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ENDS_PHRASE = _set(
    """in of on at over since until till from for by with about like between than as to into
    after before per during within without under above across through
    is are was were be been being am does do did has have had will would can could shall should
    may might must and or but nor so yet what which who whom whose when where why how
    it they them he she we you i me us him her there here
    now right today tonight tomorrow yesterday currently please"""
)
"""Words that end a noun phrase: prepositions, verbs of a question, conjunctions, pronouns, and
words that say when ("the pressure right now")."""
_WHEN = _set("current present latest last next previous")
"""Words before a noun that say when, not which: "the current time" asks for the time."""
_DETERMINERS = _set("the a an my your its our their this that these those all some any each every")
_AUXILIARIES = _set("is are was were does do did has have had will can could would should")
_IMPERATIVES = _set("tell give show list")
_TOKEN = re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?")
_SENTENCE_END = re.compile(r"[?!.](?:\s|$)")
_POSSESSIVE = re.compile(r"['’]s$")
_LETTERS = re.compile(r"[^\W\d_]+")


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

    @property
    def words(self) -> tuple[str, ...]:
        return (*self.which, self.head, *self.of)


def _phrase(words: Sequence[str], start: int, verb_last: bool) -> tuple[list[str], int]:
    """The noun phrase from ``start``: determiners, words that say when and a possessive skipped
    ("my Pi's CPU" is "CPU"), then words to one that ends a phrase. ``verb_last``: the
    question's verb comes last ("What does the probe read?"), so a phrase that runs to the end
    drops its last word."""
    i = start
    while i < len(words) and words[i].casefold() in _DETERMINERS | _WHEN:
        i += 1
    phrase: list[str] = []
    while i < len(words):
        folded = words[i].casefold()
        if folded in _ENDS_PHRASE or folded in _DETERMINERS or folded in _WHEN:
            break
        phrase = [] if _POSSESSIVE.search(folded) else [*phrase, words[i]]
        i += 1
    at_end = i >= len(words) or words[i].casefold() in _DETERMINERS
    if verb_last and at_end and len(phrase) >= 2:
        phrase.pop()
    return phrase, i


def question_subject(query: str) -> Subject | None:
    """The noun phrase the first sentence of ``query`` asks about, or None when its grammar
    names none ("How humid is it?", "On what day ...?")."""
    words = _TOKEN.findall(_SENTENCE_END.split(query.strip())[0])
    low = [w.casefold() for w in words]
    if not words:
        return None
    first = low[0]
    if first in _IMPERATIVES:  # "Tell me the time."
        start = 2 if len(low) > 1 and low[1] in {"me", "us"} else 1
        phrase, end = _phrase(words, start, verb_last=False)
    elif first in {"what's", "what’s"} or (
        first in {"what", "which"} and len(low) > 1 and low[1] in _AUXILIARIES
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
    elif first == "how" and len(low) > 3 and low[2] in _AUXILIARIES:  # "How warm is the CPU?"
        phrase, end = _phrase(words, 3, verb_last=True)
    elif first in _AUXILIARIES and len(low) > 2 and low[1] in {"it", "there"}:
        # "Will it rain?", "Is there a light sensor?": with no subject of its own, what the
        # question asks about comes after the "it" or the "there".
        phrase, end = _phrase(words, 2, verb_last=False)
    elif first in _AUXILIARIES:  # "Is the front door locked?"
        phrase, end = _phrase(words, 1, verb_last=True)
    else:
        return None
    if not phrase:
        return None
    of: list[str] = []
    if end < len(low) and low[end] == "of":
        of, _ = _phrase(words, end + 1, verb_last=False)
    # Each word may be scored: a phrase of hundreds of words costs only its last few.
    which = phrase[:-1][-(MAX_PHRASE_WORDS - 1) :]
    return Subject(tuple(which), phrase[-1], tuple(of[:MAX_PHRASE_WORDS]))


def _letters(text: str) -> list[str]:
    return _LETTERS.findall(text.casefold())


def known_words(texts: Iterable[str], results: Iterable[Any]) -> frozenset[str]:
    """The words of ``texts`` and of ``results``' keys and texts, case folded, letters only."""
    found: set[str] = set()
    for text in texts:
        found.update(_letters(text))

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                found.update(_letters(str(key)))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str):
            found.update(_letters(node))

    for result in results:
        walk(result)
    return frozenset(found)


def is_known(word: str, vocabulary: frozenset[str]) -> bool:
    """Whether each run of letters of ``word`` is a word of ``vocabulary``, its plural or
    singular, or begins one or is begun by one, four letters at least."""
    parts = _letters(word)
    return bool(parts) and all(_known_part(p, vocabulary) for p in parts)


def _known_part(part: str, vocabulary: frozenset[str]) -> bool:
    forms = {part, part.removesuffix("s"), f"{part}s"}
    if forms & vocabulary:
        return True
    stems = [f for f in forms if len(f) >= 4]
    return any(
        len(v) >= 4 and (v.startswith(f) or f.startswith(v)) for v in vocabulary for f in stems
    )


_TEMPLATE_WORDS = frozenset({"skill", "questions", "answers", "this", "call", "gets"})
"""Words every candidate's description has from its template, not from the skill."""


def asks_unknown(
    model: ModelHandle, query: str, events: Sequence[Event], candidates: Sequence[Candidate]
) -> bool:
    """Whether, with the results of ``events`` in hand, ``query`` asks about something the
    evidence does not know: neither the descriptions of the calls made (of ``candidates``) nor
    their results. A word of a skill not called vouches for nothing its result could say.
    False before any result."""
    results = [e.result for e in events if isinstance(e, SkillResultObservation)]
    if not results:
        return False
    calls = [e for e in events if isinstance(e, CallSkillAction)]
    called = sorted({c.description for call in calls if (c := first_candidate(call, candidates))})
    vocabulary = known_words(called, results) - _TEMPLATE_WORDS
    return unknown_subject(model, query, vocabulary, called, content_free(model.chat_format))


def unknown_subject(
    model: ModelHandle,
    query: str,
    vocabulary: frozenset[str],
    descriptions: Sequence[str],
    content_free: str,
) -> bool:
    """Whether ``query`` asks about something the evidence does not know (see the module's
    docstring); ``descriptions`` are those of the called skills' candidates. False when the
    question names no subject or the model cannot score (nothing is held back then)."""
    subject = question_subject(query)
    if subject is None:
        return False
    gains: dict[str, float] = {}
    for word in dict.fromkeys(subject.words):
        if not _LETTERS.search(word.casefold()) or is_known(word, vocabulary):
            continue
        gain = _gain(model, query, word, descriptions, content_free)
        if gain is None:
            return False
        gains[word] = gain

    def known(word: str, bar: float) -> bool:
        return word not in gains or gains[word] >= bar

    # The head may be known by the model alone ("RAM" after "memory"); a word before it or
    # after its "of" only by the evidence's own words: "CO2" is likely after any sensor's
    # description, and says nothing of whether this device has one.
    named = [w for w in subject.words if w != subject.head and w not in gains]
    if not known(subject.head, KNOWN_GAIN) and not named:
        return True
    return not all(known(w, WHICH_GAIN) for w in subject.which)


def _gain(
    model: ModelHandle, query: str, word: str, descriptions: Sequence[str], content_free: str
) -> float | None:
    """How much likelier ``word``, where it first stands in ``query``, is after the likeliest
    of ``descriptions`` than after ``content_free``, in nats; None when the model cannot
    score."""
    match = re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", query)
    if match is None or not descriptions:
        return None
    fmt = model.chat_format
    prompts = [*descriptions, content_free]
    before = query[: match.start()].rstrip()
    try:
        upto = model.likelihood(prompts, f" {fmt.defuse(query[: match.end()])}")
        prior = (
            model.likelihood(prompts, f" {fmt.defuse(before)}") if before else [0.0] * len(prompts)
        )
    except ScoringUnsupported:
        return None
    except ModelError as exc:
        log.warning("could not score the subject word %r: %s", word, exc)
        return None
    gains = [a - b for a, b in zip(upto, prior, strict=True)]
    return max(gains[:-1]) - gains[-1]


__all__ = [
    "KNOWN_GAIN",
    "MAX_PHRASE_WORDS",
    "WHICH_GAIN",
    "Subject",
    "asks_unknown",
    "is_known",
    "known_words",
    "question_subject",
    "unknown_subject",
]
