"""The evidence's words: what the calls that returned a result and their results write, and
whether a question's word is one of them (docs/design.md, "Grounding")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from edge_agentd.agent.english import LETTERS


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


__all__ = ["is_known", "known_words"]
