"""A second skill for a question in two parts (docs/design.md, "Small models").

A question whose two parts are joined by "and" ("What are the CPU temperature and the
humidity?", "What is the load average, and what time is it?") is split there, and each part
is scored alone after every candidate's description, the way a first call is chosen: the first
part chooses the first call, and after its result the second part's best candidate is the
second call (:func:`part_call`), when it fits that part better than the first call does by a
margin. The answer then states the first result's value, then the second's
(:mod:`edge_agentd.agent.evidence`). The split is English syntax, the conjunction; which skills
the parts need is the registry's.

Without an "and", the judgement is by likelihood alone, and off by default. After its first
result a small model is asked for the answer: asked to choose between answering and calling
another skill, it nearly always calls another. So whether a second skill is needed is
judged the way the first was chosen, noisy-channel, from the registry's descriptions alone: the
question is scored after the first call's description joined with each other candidate's (all
of them: ranked by their own descriptions first, a small model puts the ones explaining the
part the first already explains on top), and after the first call's description joined with a
description of no skill at all (:func:`content_free`).
"Which is warmer, the CPU or the BME280 sensor?" is much likelier once the CPU's skill is in view
beside the BME280's; "What is the CPU temperature?" is not, since the first description explains
all of it. The second call is made only when the best join beats the content-free join by a
margin in nats; it is never a call already made, and there is at most one.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.events import AgentState, CallSkillAction, Event, SkillResultObservation
from edge_agentd.agent.language import Language
from edge_agentd.agent.prompt import ChatFormat
from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.agent.question import Question, head_noun_forms

if TYPE_CHECKING:
    from edge_agentd.guidance.candidates import Candidate

log = logging.getLogger(__name__)


def content_free(fmt: ChatFormat, language: Language = ENGLISH) -> str:
    """A skill description with no content, in the candidates' form: how likely a question is
    after it is the baseline a fitting skill must beat."""
    empty = language.skill_prompt.format(signature="", description="", extra="", listed="")
    return f"{fmt.user_prefix}{empty}"


def joined(first: str, second: str, fmt: ChatFormat) -> str:
    """Two candidates' descriptions as one text the question is scored after: the first's, its
    open list of questions closed, then the second's in the same turn."""
    return f"{first.removesuffix(chr(10) + '-')}\n{second.removeprefix(fmt.user_prefix)}"


def first_candidate(call: CallSkillAction, candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate ``call`` was: the one with its arguments, else its skill's open one."""
    key = (call.skill_name, json.dumps(call.arguments))
    same = [c for c in candidates if c.skill_name == call.skill_name]
    return next((c for c in same if c.key == key), None) or next(
        (c for c in same if c.arguments is None), None
    )


def call_words(events: Sequence[Event], candidates: Sequence[Candidate]) -> list[list[str]]:
    """For each result of ``events``, the words of the call that gave it: its arguments' values
    and what its candidate gets ("humidity in %RH")."""
    found: list[list[str]] = []
    for before, event in itertools.pairwise([None, *events]):
        if isinstance(event, SkillResultObservation):
            call = before if isinstance(before, CallSkillAction) else None
            candidate = first_candidate(call, candidates) if call is not None else None
            arguments = [str(v) for v in call.arguments.values()] if call is not None else []
            # What it gets, not its description: that holds the skill's words, which name
            # every call of it, and the prompt's own ("user" of a turn's marker).
            found.append([*arguments, *([candidate.gets] if candidate and candidate.gets else [])])
    return found


def second_call(
    model: ModelHandle,
    query: str,
    first: Candidate,
    left: Sequence[Candidate],
    margin: float,
    *,
    language: Language = ENGLISH,
) -> tuple[Candidate | None, float]:
    """The candidate of ``left`` to call after ``first`` for ``query`` (defused), and by how many
    nats its join beat the content-free join; None when none beats it by ``margin``."""
    others = [c for c in left if c.key != first.key]
    if not others:
        return None, 0.0
    fmt = model.chat_format
    prompts = [joined(first.description, c.description, fmt) for c in others]
    prompts.append(joined(first.description, content_free(fmt, language), fmt))
    scores = model.likelihood(prompts, f" {query}")
    best = max(range(len(others)), key=scores.__getitem__)
    gain = scores[best] - scores[-1]
    return (others[best] if gain >= margin else None), gain


def two_parts_answered(state: AgentState, question: Question) -> bool:
    """Whether ``question`` (``state``'s) is in two parts and its run made two calls, both
    answered: then each result is one part's."""
    events = state.stream.root
    calls = [e for e in events if isinstance(e, CallSkillAction)]
    results = [e for e in events if isinstance(e, SkillResultObservation)]
    return len(calls) == len(results) == 2 and bool(question.parts)


def named_calls(
    query: str, candidates: Sequence[Candidate], language: Language = ENGLISH
) -> list[Candidate]:
    """The candidates with fixed arguments one of which is the question's head noun, or its
    plural or singular (:func:`~edge_agentd.guidance.asked.head_noun_forms`)."""
    forms = head_noun_forms(query, language)
    return [
        c
        for c in candidates
        if forms
        and c.arguments
        and any(isinstance(v, str) and v.casefold() in forms for v in c.arguments.values())
    ]


def unasked_narrowings(
    query: str, candidates: Sequence[Candidate], language: Language = ENGLISH
) -> set[tuple[str, str]]:
    """The keys of the candidates that narrow a call their skill also lists with no arguments
    (``list_sensors(quantity="humidity")`` and ``list_sensors()``) where the question does not
    name each of their values as a word of its own: a narrower call needs the question to ask
    for what narrows it. Linear in the candidates, however many a plugin lists."""
    whole = {c.skill_name for c in candidates if c.arguments == {}}
    words = f" {_word_run(query, language)} "
    return {
        c.key
        for c in candidates
        if c.arguments
        and c.skill_name in whole
        and not all(isinstance(v, str) and _names(words, v, language) for v in c.arguments.values())
    }


def _names(words: str, value: str, language: Language) -> bool:
    """Whether ``words`` (:func:`_word_run`'s) holds ``value`` as a word or words of its own,
    or their plural."""
    said = _word_run(value, language)
    plural = f"{said}{language.plural_suffix}"
    return bool(said) and (f" {said} " in words or f" {plural} " in words)


def _word_run(text: str, language: Language) -> str:
    """``text``'s words, case folded, one space apart: what is compared, with no pattern to
    build per value a plugin lists."""
    return " ".join(language.alnum.findall(text.casefold()))


def part_call(
    model: ModelHandle,
    parts: Sequence[str],
    first: Candidate,
    *,
    candidates: Sequence[Candidate],
    left: Sequence[Candidate],
    margin: float,
    language: Language = ENGLISH,
) -> Candidate | None:
    """The candidate of ``left`` that the second part of the question fits best (of the calls
    it names, :func:`named_calls`, when it names some), when that part fits it better than it
    fits ``first``, the first part's call, by ``margin`` nats, or names it and not ``first``.
    ``first`` is one of ``candidates``."""
    fmt = model.chat_format
    prompts = [c.description for c in candidates]
    at_first = next((i for i, c in enumerate(candidates) if c.key == first.key), None)
    if at_first is None:
        return None
    open_keys = {c.key for c in left}
    for part in parts[1:]:
        scores = model.likelihood(prompts, f" {fmt.defuse(part)}")
        named = {c.key for c in named_calls(part, candidates, language)}
        pool = [i for i, c in enumerate(candidates) if not named or c.key in named]
        best = max(pool, key=scores.__getitem__)
        chosen, gain = candidates[best], scores[best] - scores[at_first]
        log.debug("part %r fits %s by %.2f nats over the first call", part, chosen.skill_name, gain)
        # A part that names calls the first call is not one of asks for one of them, however
        # close the scores (two readings of one sensor score within the margin of each other).
        if (gain >= margin or (named and first.key not in named)) and chosen.key in open_keys:
            return chosen
    return None


def follow_up(
    model: ModelHandle,
    state: AgentState,
    candidates: Sequence[Candidate],
    left: Sequence[Candidate],
    margin: float | None,
    *,
    part_margin: float | None = None,
    question: Question | None = None,
) -> Candidate | None:
    """Right after the run's first call returned: the second skill its question needs, else None
    (and None at any other point). With ``part_margin``, a question in two parts gets the call
    its other part needs; else, with ``margin``, the likelihood judges. ``left``: the candidates
    not yet called; ``question``, ``state``'s as the guide reads it (by default, as the run
    does). Raises what ``model.likelihood`` raises."""
    question = state.question if question is None else question
    language = question.language
    events = state.stream.root
    made = [e for e in events if isinstance(e, CallSkillAction)]
    if len(made) != 1 or not isinstance(events[-1], SkillResultObservation):
        return None
    first = first_candidate(made[0], candidates)
    if first is None:
        return None
    parts = [p.text for p in question.parts] if part_margin is not None else []
    if parts and part_margin is not None:
        return part_call(
            model,
            parts,
            first,
            candidates=candidates,
            left=left,
            margin=part_margin,
            language=language,
        )
    if margin is None:
        return None
    query = model.chat_format.defuse(state.query)
    second, gain = second_call(model, query, first, left, margin, language=language)
    log.debug("a second call after %s gains %.2f nats: %s", first.skill_name, gain, second)
    return second


__all__ = [
    "call_words",
    "content_free",
    "first_candidate",
    "follow_up",
    "joined",
    "named_calls",
    "part_call",
    "second_call",
    "two_parts_answered",
    "unasked_narrowings",
]
