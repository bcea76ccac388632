"""Whether the evidence knows what a question is about (docs/design.md, "Small models").

A 270M model that must state a value states one, whatever it was asked: "What is the light
level in lux?" got "The light level in lux is 41.5 %RH." and "What does the garage door sensor
read?" got a pressure. The answer is a true value, of the wrong thing: wrong with confidence. No
likelihood of the whole question tells these apart from answerable ones (a sensor skill's
description makes any "what does the ... sensor read?" likely). What does is the *subject*, the
noun phrase the question asks about ("light level", "garage door sensor"), set beside every
word the skills and their results use.

- **The subject** is found by English grammar alone: the phrase after "what is", "which",
  "how many", "how warm is", "is", "will it", "is there", "tell me", ... up to a word that
  ends a noun phrase (a preposition, a verb of the question, a pronoun, "current" and other
  words that say when), with the phrase after an "of" that follows it ("the ID of the 1-Wire
  sensor"). Its last word is its head; the words before say which one ("garage door" of
  "garage door sensor").
- **A word is named** by the evidence when a word of the calls that gave a result (the skill's
  name, description, examples, and what a ready call gets) or of their results (keys, texts)
  is it, its plural or singular, or begins with it or is its start (four letters at least:
  "percentage" and "used_percent"). A word is *known* when it is named, or when the model
  finds it likely there: how much likelier the question's word is after a called skill's
  description than after a description of no skill, the question before it being the same
  ("RAM" after "memory", +7 nats; "garage" after a sensor's, +0.7).
- **Cannot tell** when the head is not known at :data:`KNOWN_GAIN` and no other word of the
  subject is named ("CO2" of "CO2 level" is likely after any sensor's description, and says
  nothing of whether this device has one), or when a word that says which one is not known at
  :data:`WHICH_GAIN`: the evidence names no such thing. A question in two parts, when both
  parts do.

Built from the question, the calls made and their results alone, for any skill. The guidance
then holds the answer to begin "I cannot tell", and otherwise, the subject judged known, to
state a value; the model still writes it. A question with no subject, or whose words the model
cannot score, is not judged (None), and its answer may say it cannot tell.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from edge_agentd.agent.english import (
    AUXILIARIES,
    DETERMINERS,
    ENDS_PHRASE,
    HERE,
    IMPERATIVES,
    LETTERS,
    PLACE,
    POSSESSIVE_END,
    SENTENCE_END,
    STATE_VERBS,
    TOKEN,
    WHEN,
)
from edge_agentd.agent.events import CallSkillAction, Event, SkillResultObservation
from edge_agentd.agent.followup import content_free, first_candidate, question_parts
from edge_agentd.agent.protocol import ModelError, ModelHandle, ScoringUnsupported

if TYPE_CHECKING:
    from edge_agentd.agent.candidates import Candidate

log = logging.getLogger(__name__)

KNOWN_GAIN = 4.0
"""Nats by which a subject's head must be likelier after a called skill's description than
after no skill's to be known, when no word of the evidence names it. On the benchmark's dev
third, the least an answerable head gained was 4.9 ("gigabytes"), the most an unanswerable one
gained 2.9 ("weather"); the bar was set with every third's gains in view."""
WHICH_GAIN = 2.0
"""The same, for a word before the head that says which one: on the dev third "relative" of
"relative humidity" gained 2.8, "garage" of "garage door sensor" 0.7. A thing named by words
the evidence lacks is not one it has."""
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


def _letters(text: str) -> list[str]:
    return LETTERS.findall(text.casefold())


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


_TEMPLATE_WORDS = frozenset({"the", "skill", "questions", "answers", "this", "call", "gets"})
"""Words every candidate's description has from its template (candidates.py), not from the
skill."""


def asks_unknown(
    model: ModelHandle, query: str, events: Sequence[Event], candidates: Sequence[Candidate]
) -> bool | None:
    """Whether, with the results of ``events`` in hand, ``query`` asks about something the
    evidence does not know: neither the descriptions of the calls that gave a result (of
    ``candidates``) nor those results. A word of a skill not called, or whose call failed,
    vouches for nothing. A question in two parts asks about something unknown when each part
    does. None when it was not judged: before any result, or for a part with no subject or
    words the model cannot score."""
    results = [e.result for e in events if isinstance(e, SkillResultObservation)]
    if not results:
        return None
    answered = [
        call
        for call, after in itertools.pairwise(events)
        if isinstance(call, CallSkillAction) and isinstance(after, SkillResultObservation)
    ]
    called = sorted({c.description for a in answered if (c := first_candidate(a, candidates))})
    prefix = model.chat_format.user_prefix
    described = known_words([d.removeprefix(prefix) for d in called], []) - _TEMPLATE_WORDS
    vocabulary = described | known_words([], results)
    free = content_free(model.chat_format)
    verdicts = {
        unknown_subject(model, part, vocabulary, called, free)
        for part in question_parts(query) or [query]
    }
    return verdicts.pop() if len(verdicts) == 1 else None


def unknown_subject(
    model: ModelHandle,
    query: str,
    vocabulary: frozenset[str],
    descriptions: Sequence[str],
    content_free: str,
) -> bool | None:
    """Whether ``query`` asks about something the evidence does not know (see the module's
    docstring); ``descriptions`` are those of the called skills' candidates. None when it was
    not judged: the question names no subject, or the model cannot score. A word is scored
    only when its gain decides: a which-word the evidence does not name, then the head, when
    no other word is named."""
    subject = question_subject(query)
    if subject is None:
        return None

    def named(word: str) -> bool:
        return LETTERS.search(word.casefold()) is not None and is_known(word, vocabulary)

    for word in dict.fromkeys(subject.which):
        if named(word) or not LETTERS.search(word.casefold()):
            continue
        gain = _gain(model, query, word, descriptions, content_free)
        if gain is None:
            return None
        if gain < WHICH_GAIN:
            return True  # "garage" of "garage door sensor"
    head = subject.head
    # The head may be known by the model alone ("RAM" after "memory"); another word only by
    # the evidence's own words: "CO2" of "CO2 level" is likely after any sensor's
    # description, and says nothing of whether this device has one.
    if named(head) or not LETTERS.search(head.casefold()):
        return False
    if any(named(w) for w in (*subject.which, *subject.of)):
        return False
    gain = _gain(model, query, head, descriptions, content_free)
    return None if gain is None else gain < KNOWN_GAIN


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
    "asked_state",
    "asks_unknown",
    "is_known",
    "known_words",
    "question_subject",
    "unknown_subject",
]
