"""Why the engine cannot tell, in words a person reads: a skill's own error where it says one,
else what no skill here reads, in the question's words."""

from __future__ import annotations

import re
from collections.abc import Sequence

from edge_agentd.agent.events import Event, SkillResultObservation, ToolErrorObservation
from edge_agentd.agent.question import Question
from edge_agentd.agent.vocabulary import known_words
from edge_agentd.guidance.fitting import names_subject, subject_phrase
from edge_agentd.guidance.labels import words_of
from edge_agentd.guidance.saying import clean

MAX_REASON_CHARS = 160
"""A skill's error longer than this is not said: it is a trace, not a reason."""

_EXCEPTION_NAME = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Warning):\s*")
"""The type a skill's error is told with ("SensorError: "): a person reads what follows."""

ECHO_WORDS = 3
"""A reason holding this many of the question's words in a row quotes the question back (a
skill that took the question for a name: "No such file: '.../tell me whether the door is
open'"): it says nothing of why, and would seem to state what was asked."""


def _echoes(question: Question, reason: str) -> bool:
    """Whether ``reason`` quotes :data:`ECHO_WORDS` of ``question``'s words in a row."""
    token = question.language.token
    asked = [w.casefold() for w in token.findall(question.text)]
    said = [w.casefold() for w in token.findall(reason)]
    runs = {tuple(asked[i : i + ECHO_WORDS]) for i in range(len(asked) - ECHO_WORDS + 1)}
    return any(tuple(said[i : i + ECHO_WORDS]) in runs for i in range(len(said) - ECHO_WORDS + 1))


def cannot_tell_sentence(
    question: Question, reason: str | None = None, *, results: bool = False
) -> str:
    """ "I cannot tell: " and why, in words a person reads: ``reason`` (a skill's own error,
    "no thermal zone was found under /sys/class/thermal.") where there is one, else "no skill
    here reads the <subject>." (or "says whether the <subject> is <state>." to a yes-or-no
    question), the subject in the question's words; with ``results`` (skills were called and
    answered), "no result gives the <subject>.": a skill that answered reads something."""
    la = question.language
    cannot = la.cannot_tell
    reads, says = la.none_reads[results], la.none_says[results]
    said = _EXCEPTION_NAME.sub("", " ".join((reason or "").split()))
    if said and len(said) <= MAX_REASON_CHARS and clean(said) and not _echoes(question, said):
        said = said if said[1:2].isupper() else said[:1].lower() + said[1:]
        return la.cannot_because.format(cannot=cannot, reason=said.rstrip(".!?"))
    phrase = subject_phrase(question)
    if phrase is None or not clean(phrase):
        return la.cannot_asked.format(cannot=cannot, says=says)
    subject = question.subject
    if subject is not None and subject.quality == subject.head and not subject.which:
        return la.cannot_how.format(cannot=cannot, phrase=phrase, says=says)  # "How loud is it?"
    if question.predicate:
        be, state = la.verb(words_of(phrase, la)), " ".join(question.predicate)
        return la.cannot_whether.format(cannot=cannot, phrase=phrase, be=be, state=state, says=says)
    return la.cannot_read.format(cannot=cannot, phrase=phrase, reads=reads)


def failure_reason(question: Question, events: Sequence[Event]) -> str | None:
    """Why the run cannot tell, in a failed skill's own words ("no thermal zone was found
    under /sys/class/thermal"): the last failure whose skill or words name what was asked, else,
    when every call failed, the last one; None when none says why."""
    failures = [e for e in events if isinstance(e, ToolErrorObservation)]
    language = question.language
    naming = [
        e.error
        for e in failures
        if names_subject(question, known_words([e.skill_name, e.error], [], language))
    ]
    if naming:
        return naming[-1]
    answered = any(isinstance(e, SkillResultObservation) for e in events)
    return failures[-1].error if failures and not answered else None


__all__ = ["ECHO_WORDS", "MAX_REASON_CHARS", "cannot_tell_sentence", "failure_reason"]
