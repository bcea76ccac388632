"""Where to look in a result: the part a question asks about (docs/design.md, "Small models").

A result with several parts (a status with load, memory and disk; a list of readings) is read
wrong by a small model, which copies the first number it sees. Each part is scored the
noisy-channel way, log P(question | part), and the result turn names the likeliest part after
restating the question. Built from the result and the question alone, for any skill.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.jsonvalues import compact_json, walk
from edge_agentd.agent.language import Language
from edge_agentd.agent.protocol import ModelError, ModelHandle, ScoringUnsupported

log = logging.getLogger(__name__)

MAX_FOCUS_PARTS = 24
"""A result with more parts than this is not focused: scoring each would cost more than it helps."""
MIN_FOCUS_PARTS = 8
"""A result with fewer parts than this is not focused: a small model reads a handful of lines
whole, and a pointer to one of them misleads it (the weekday named when the time was asked);
focus helps on a result too long to read whole, such as the system status (docs/performance.md,
"What the code's choices rest on")."""
MAX_PART_CHARS = 200


def result_parts(result: Any) -> list[tuple[str, Any]]:
    """The parts of a skill's result a question may ask about, with their paths: each scalar of
    its objects (``memory.available_mib``), each item of its lists (``readings[1]``, whole) and
    a longer list's length (``readings in all``)."""
    return _parts(result, ENGLISH)


def _parts(result: Any, language: Language) -> list[tuple[str, Any]]:
    parts: list[tuple[str, Any]] = []

    def visit(value: Any, path: str) -> list[tuple[Any, str]]:
        if isinstance(value, dict) and value:
            return [(item, f"{path}.{key}" if path else str(key)) for key, item in value.items()]
        if isinstance(value, list) and value:
            parts.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
            if len(value) > 1:
                # How many there are is a part of its own ("how many sensors?").
                parts.append((f"{path} {language.in_all}", len(value)))
        else:
            parts.append((path, value))
        return []

    walk(result, visit, "")
    return parts


def asked_parts(
    parts: list[tuple[str, Any]], query: str, language: Language = ENGLISH
) -> list[tuple[str, Any]]:
    """The parts a question can be asking for: not a name it already states. A part whose text
    holds a word the query holds (the sensor's id in "sensor 28-00a1 reads -4.5 C: how cold is
    it?", the label "cpu-thermal" of "what is the CPU temperature?") scores highest under
    log P(question | part) because the question quotes it, while the asker, who wrote it, is
    asking about something else. Numbers are kept: "is the load 0.42?" asks about the part
    holding 0.42; so are texts under four characters."""
    asked = set(naming_words(query, language))
    kept = [
        (path, value)
        for path, value in parts
        if not (
            isinstance(value, str)
            and len(value) >= 4
            and asked.intersection(naming_words(value, language))
        )
    ]
    return kept or parts


def naming_words(text: str, language: Language = ENGLISH) -> list[str]:
    """The words of ``text`` that can name something: runs of letters and digits, three or
    more long, case folded ("bme280 (iio:device0)" holds "bme280", "iio" and "device0")."""
    return [w for w in language.alnum.findall(text.casefold()) if len(w) >= 3]


def part_text(path: str, value: Any) -> str:
    shown = compact_json(value)
    if len(shown) > MAX_PART_CHARS:
        shown = shown[:MAX_PART_CHARS] + "..."
    return f"{path} = {shown}"


def focused_part(
    model: ModelHandle, query: str, skill_name: str, result: Any, language: Language = ENGLISH
) -> str | None:
    """The part of ``result`` the question asks about, as ``path = value``; None for a result
    of fewer than :data:`MIN_FOCUS_PARTS` parts or more than :data:`MAX_FOCUS_PARTS`, or a
    model that cannot score."""
    parts = asked_parts(_parts(result, language), query, language)
    if not MIN_FOCUS_PARTS <= len(parts) <= MAX_FOCUS_PARTS:
        return None
    texts = [part_text(path, value) for path, value in parts]
    scores = part_scores(model, query, skill_name, texts, language)
    if scores is None:
        return None  # the answer is still asked for; it only lacks the pointer
    return texts[max(range(len(texts)), key=scores.__getitem__)]


def part_scores(
    model: ModelHandle,
    query: str,
    skill_name: str,
    texts: Sequence[str],
    language: Language = ENGLISH,
) -> list[float] | None:
    """log P(query | "Result of skill_name: text") for each of a result's ``texts`` (the
    noisy-channel direction); None for a model that cannot score, or whose scoring failed
    (logged)."""
    fmt = model.chat_format
    prompts = [
        fmt.user_prefix
        + fmt.defuse(language.part_prompt.format(skill=skill_name, text=text))
        + language.part_questions
        for text in texts
    ]
    try:
        return model.likelihood(prompts, f" {fmt.defuse(query)}")
    except ScoringUnsupported:
        return None
    except ModelError as exc:
        log.warning("could not score the parts of %s's result: %s", skill_name, exc)
        return None


__all__ = [
    "asked_parts",
    "focused_part",
    "naming_words",
    "part_scores",
    "part_text",
    "result_parts",
]
