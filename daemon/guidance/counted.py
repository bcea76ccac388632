"""A count answers how many of the things asked about only when it counts those things: "How
many sensors can measure humidity?" of an unfiltered listing of three, one of which measures
humidity, is not "There are 3 sensors."."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edge_agentd.agent.jsonvalues import inside, walk
from edge_agentd.agent.language import Language
from edge_agentd.agent.resultlines import Line
from edge_agentd.agent.vocabulary import is_known, known_words
from edge_agentd.guidance.labels import prefix


def counting_what_was_asked(
    lines: Sequence[Line], every: Sequence[Line], qualifiers: Sequence[str], language: Language
) -> list[Line]:
    """``lines`` without the counts (a list's line, or a count key beside a list in ``every``,
    the result's lines) of lists whose items ``qualifiers`` (the question's words that say
    which ones) name only some of: such a count is of more things than were asked about."""
    if not qualifiers:
        return list(lines)

    def partly_named(listed: Line) -> bool:
        # The words that name the list itself ("sensors") say no which ones.
        own = known_words([listed.name], [], language)
        words = [w for w in qualifiers if not is_known(w, own, language)]
        named = [known_words(_texts(item), [], language) for item in listed.node]
        return any(
            0 < sum(is_known(word, texts, language) for texts in named) < len(named)
            for word in words
        )

    def counts_partly(line: Line) -> bool:
        if isinstance(line.node, list):
            return partly_named(line)
        key = line.name.split()[-1].casefold() if line.name else ""
        if key not in language.count_keys:
            return False
        beside = [x for x in every if isinstance(x.node, list) and prefix(x) == prefix(line)]
        return any(partly_named(listed) for listed in beside)

    return [line for line in lines if not counts_partly(line)]


def _texts(item: Any) -> list[str]:
    """Every key and text of ``item``, a list's item."""
    found: list[str] = []

    def visit(node: Any, at: None) -> list[tuple[Any, None]]:
        if isinstance(node, dict):
            found.extend(str(key) for key in node)
        elif isinstance(node, str):
            found.append(node)
        return inside(node, at)

    walk(item, visit, None)
    return found


__all__ = ["counting_what_was_asked"]
