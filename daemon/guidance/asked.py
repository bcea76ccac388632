"""Which line of a result the question asks about (docs/design.md, "Small models").

A small model shown a result of several lines copies a value, but often the wrong one: the
weekday for "what date is next Friday?", the label for "what does the probe read?". It judges
better how likely the question is after each line's *name*, log P(question | name), the same
noisy-channel direction that chooses the skill: "memory available_mib" explains "How much memory
is available?" better than "memory used_percent" does. The name alone, not its value, is scored:
digits in a scored text make any question unlikely after it, whatever they mean.

That direction alone follows the words a question shares with a name: "days from today" beats
"date" for "what date is next Friday?", and "time" is within reach of "weekday" for "what day of
the week is it?". So each name is also scored the other way, how much likelier it is as the part
that answers this question than as the part that answers a question with no content,
log P(name | question) - log P(name | "What is it?") (pointwise mutual information, which does not
favour short names), and a line's score is the sum of the two: the second direction keeps the
first from following shared words alone (docs/performance.md, "What the code's choices rest
on").

Before any scoring, the question may name the line itself: the noun a *what*, *which* or
*how many* question opens with ("What date is next Friday?", "Which sensors are connected?",
"What is the humidity?", "How many hours ...?", "What is today's date?") is the thing it asks
for, and a line whose own key is that noun, when it is the only one, is the asked line
(:func:`head_noun`). Both scoring directions can put "days from today" before "date" for a
"what date" question, and the answer then says "Next Friday is 7 days from today." It is English
grammar, not a list of the skills' words: the noun
is the question's, and the names are whatever the skill's result calls its parts.

Otherwise, of each result, the line the question is likeliest after, and any within
``ASKED_MARGIN`` nats of it, are the ones its answer must state one of
(:func:`~edge_agentd.agent.evidence.copyable`'s ``asked``); every value stays copyable, and the
model still writes the answer. Built from the result and the question alone, for any skill.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.language import Language
from edge_agentd.agent.protocol import ModelError, ModelHandle, ScoringUnsupported
from edge_agentd.agent.question import head_noun_forms
from edge_agentd.agent.resultlines import Line, names_unit, result_line_parts
from edge_agentd.guidance.focus import naming_words, part_scores

log = logging.getLogger(__name__)

ASKED_MARGIN = 2.0
"""Nats within the best line's score that a line is still one the question may ask about."""
MAX_ASKED_LINES = 48
"""A result with more lines than this is not narrowed: each line is a text scored."""


def candidate_lines(result: Any, query: str, language: Language = ENGLISH) -> list[Line]:
    """The lines of ``result`` a question can be asking about: not another form of a reading
    whose unit it does not name, and not a text the question already states (the sensor named
    in "what does the BME280 show?" is not what is asked, though the question is likeliest
    after it)."""
    asked = set(naming_words(query, language))
    lines = []
    for line in result_line_parts(result, language):
        node = line.node
        if line.alternative and not names_unit(node, query, language):
            continue
        named = isinstance(node, str) and len(node) >= 4
        if named and asked.intersection(naming_words(node, language)):
            continue
        lines.append(line)
    return lines


def _named_line(query: str, lines: Sequence[Line], language: Language) -> Line | None:
    """The one line whose own key (its name's last part, "humidity" of "readings humidity",
    "days_from_today" whole) is the question's head noun or its plural or singular, or None
    when none is or several are."""
    forms = head_noun_forms(query, language)
    named = [line for line in lines if (line.name.split() or [""])[-1].casefold() in forms]
    return named[0] if len(named) == 1 else None


def asked_lines(
    model: ModelHandle,
    query: str,
    results: Sequence[tuple[str, Any]],
    language: Language = ENGLISH,
) -> list[Line] | None:
    """Of each ``(skill_name, result)``, the lines ``query`` is likeliest after (the best, and
    any within :data:`ASKED_MARGIN` of it); None when no result has lines to choose from, or
    the model cannot score (then nothing is narrowed)."""
    chosen: list[Line] = []
    for skill_name, result in results:
        lines = candidate_lines(result, query, language)
        if len(lines) <= 1 or len(lines) > MAX_ASKED_LINES:
            chosen.extend(lines)
            continue
        named = _named_line(query, lines, language)
        if named is not None:
            chosen.append(named)
            continue
        # A line is scored by its name alone, in a skill's words.
        names = [line.name.replace("_", " ") for line in lines]
        scores = part_scores(model, query, skill_name, names, language)
        answers = answering_gains(model, query, skill_name, names, language)
        if scores is None or answers is None:
            return None  # the answer is still asked for; it is only not narrowed
        scores = [a + b for a, b in zip(scores, answers, strict=True)]
        best = max(scores)
        near = zip(lines, scores, strict=True)
        chosen.extend(line for line, score in near if score >= best - ASKED_MARGIN)
    if language.how_many_question.match(query):
        # "How many sensors ...?" asks for a list's count, not its names: a small model shown
        # the names copies them, over and over, instead of counting.
        chosen = [_count_of(line) for line in chosen]
    return chosen or None


def _count_of(line: Line) -> Line:
    """A list's line as its count alone; any other line as it is."""
    if isinstance(line.node, list):
        return dataclasses.replace(line, node=len(line.node))
    return line


def answering_gains(
    model: ModelHandle,
    query: str,
    skill_name: str,
    names: Sequence[str],
    language: Language = ENGLISH,
) -> list[float] | None:
    """log P(name | query) - log P(name | a content-free question), each name read as the part
    of ``skill_name``'s result that answers the question; None for a model that cannot score,
    or whose scoring failed (logged)."""
    fmt = model.chat_format

    def prompt(question: str) -> str:
        text = language.answering_prompt.format(question=question, skill=skill_name)
        return f"{fmt.user_prefix}{fmt.defuse(text)}"

    # Scored beside the conversation (likelihood), not in its place (score): the answer that
    # follows would otherwise evaluate the whole conversation again, the costliest thing a
    # step does on a CPU.
    prompts = [prompt(query), prompt(language.content_free_question)]
    gains = []
    try:
        for name in names:
            asked, free = model.likelihood(prompts, f" {fmt.defuse(name)}")
            gains.append(asked - free)
    except ScoringUnsupported:
        return None
    except ModelError as exc:
        log.warning("could not score the line names of %s's result: %s", skill_name, exc)
        return None
    return gains


__all__ = [
    "answering_gains",
    "asked_lines",
    "candidate_lines",
]
