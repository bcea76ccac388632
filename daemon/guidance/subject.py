"""Whether the evidence knows what a question is about (docs/design.md, "Small models").

A small model that must state a value states one, whatever it was asked: "What is the light
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

import itertools
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from edge_agentd.agent.claims import compares_things
from edge_agentd.agent.events import CallSkillAction, Event, SkillResultObservation
from edge_agentd.agent.protocol import ModelError, ModelHandle, ScoringUnsupported
from edge_agentd.agent.question import Question
from edge_agentd.agent.vocabulary import is_known, known_words
from edge_agentd.guidance.followup import content_free, first_candidate

if TYPE_CHECKING:
    from edge_agentd.guidance.candidates import Candidate

log = logging.getLogger(__name__)

KNOWN_GAIN = 4.0
"""Nats by which a subject's head must be likelier after a called skill's description than
after no skill's to be known, when no word of the evidence names it: a bar between what the
heads of answerable questions gain and what those of unanswerable ones do (docs/performance.md,
"What the code's choices rest on")."""
WHICH_GAIN = 2.0
"""The same, for a word before the head that says which one ("relative" of "relative humidity"
is known, "garage" of "garage door sensor" is not, where no skill reads a garage). A thing named
by words the evidence lacks is not one it has."""


def asks_unknown(
    model: ModelHandle,
    question: Question,
    events: Sequence[Event],
    candidates: Sequence[Candidate],
) -> bool | None:
    """Whether, with the results of ``events`` in hand, ``question`` asks about something the
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
    prefix, language = model.chat_format.user_prefix, question.language
    # Less the words every candidate's description has from its template, not from the skill.
    described = known_words([d.removeprefix(prefix) for d in called], [], language)
    vocabulary = (described - language.prompt_words) | known_words([], results, language)
    free = content_free(model.chat_format, language)
    verdicts = {
        unknown_subject(model, part, vocabulary, called, free)
        for part in question.parts or [question]
    }
    return verdicts.pop() if len(verdicts) == 1 else None


def unknown_subject(
    model: ModelHandle,
    question: Question,
    vocabulary: frozenset[str],
    descriptions: Sequence[str],
    content_free: str,
) -> bool | None:
    """Whether ``question`` asks about something the evidence does not know (see the module's
    docstring); ``descriptions`` are those of the called skills' candidates. None when it was
    not judged: the question names no subject, or the model cannot score. A word is scored
    only when its gain decides: a which-word the evidence does not name, then the head, when
    no other word is named."""
    subject, query, language = question.subject, question.text, question.language
    if subject is None or compares_things(question):
        return None  # "Which is warmer, the CPU or the probe?": the things follow its head
    letters = language.letters

    def named(word: str) -> bool:
        return letters.search(word.casefold()) is not None and is_known(word, vocabulary, language)

    for word in dict.fromkeys(subject.which):
        if named(word) or not letters.search(word.casefold()):
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
    if named(head) or not letters.search(head.casefold()):
        return False
    if any(named(w) for w in (*subject.which, *subject.of, *subject.owner)):
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
    "WHICH_GAIN",
    "asks_unknown",
    "unknown_subject",
]
