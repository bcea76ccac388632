"""The evidence's words: what the calls that returned a result and their results write, and
whether a question's word is one of them (docs/design.md, "Grounding")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from edge_agentd.agent.amounts import amount_of
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.jsonvalues import inside, walk
from edge_agentd.agent.language import Language


def known_words(
    texts: Iterable[str], results: Iterable[Any], language: Language = ENGLISH
) -> frozenset[str]:
    """The words of ``texts`` and of ``results``' keys and texts, case folded, letters only;
    an amount glued into one word names its unit's word too (``5min`` names "minutes", as
    "the 5-minute load average" asks for it)."""
    letters = language.letters
    found: set[str] = set()

    def add(text: str) -> None:
        folded = text.casefold()
        found.update(letters.findall(folded))
        if language.amount is not None and any(c.isdigit() for c in folded):
            for match in language.amount.finditer(folded.replace("_", " ")):
                glued = amount_of(match.group(0), language) if match.group(0).isalnum() else None
                found.update(letters.findall(glued[1].casefold()) if glued else ())

    for text in texts:
        add(text)

    def visit(node: Any, at: None) -> list[tuple[Any, None]]:
        if isinstance(node, str):
            add(node)
            return []
        if isinstance(node, dict):
            for key in node:
                add(str(key))
        return inside(node, None)

    for result in results:
        walk(result, visit, None)
    return frozenset(found)


def is_known(word: str, vocabulary: frozenset[str], language: Language = ENGLISH) -> bool:
    """Whether each run of letters of ``word`` is a word of ``vocabulary``, its plural or
    singular, or begins one or is begun by one, four letters at least."""
    parts = language.letters.findall(word.casefold())
    return bool(parts) and all(_known_part(p, vocabulary, language) for p in parts)


def _known_part(part: str, vocabulary: frozenset[str], language: Language) -> bool:
    forms = language.forms(part)
    if forms & vocabulary:
        return True
    stems = [f for f in forms if len(f) >= 4]
    return any(
        len(v) >= 4 and (v.startswith(f) or f.startswith(v)) for v in vocabulary for f in stems
    )


__all__ = ["is_known", "known_words"]
