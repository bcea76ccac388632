"""How many: a count answers how many of the things asked about only when it counts those
things: "How many sensors can measure humidity?" of an unfiltered listing of three, one of which
measures humidity, is not "There are 3 sensors.". A count key counts the list beside it
(``count`` beside ``sensors``), and nothing but a number answers how many ("The kind is iio." of
a listing answers no how-many question)."""

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


def counted_things(line: Line, every: Sequence[Line], language: Language) -> tuple[str, ...]:
    """The keys of the lists and objects beside ``line`` when its own key is a count
    (``count`` beside ``sensors``): what it counts, named by them. () for any other line."""
    key = line.name.split()[-1].casefold() if line.name else ""
    if key not in language.count_keys:
        return ()
    at = prefix(line)
    found: dict[str, None] = {}
    for other in every:
        path = other.name.split()
        # A key with more below it (an object's or a list's items' lines), or a list's line.
        beside = tuple(path[: len(at)]) == at and len(path) > len(at)
        if beside and (len(path) > len(at) + 1 or isinstance(other.node, list)):
            found.setdefault(path[len(at)], None)
    return tuple(found)


def says_how_many(line: Line, head: str, in_unit: bool, language: Language) -> bool:
    """Whether ``line`` can say how many ``head`` there are: a list (its length), or a number
    that counts them (a count key's, or one whose own key names them: ``open_doors``); of an
    amount asked in a unit (``in_unit``: "How many hours ...?"), any number, reading or text
    that opens with one ("3 d 4 h"). Never a name, a state or a flag, nor a reading of one of
    the things counted (a sensor's 48.3 °C is no number of sensors)."""
    node = line.node
    if isinstance(node, bool):
        return False
    if isinstance(node, list):
        return True
    if in_unit:
        opens_with_number = isinstance(node, str) and node[:1].isdigit()
        return isinstance(node, (int, float, dict)) or opens_with_number
    return isinstance(node, (int, float)) and counts(line, head, language)


def counts(line: Line, head: str, language: Language) -> bool:
    """Whether ``line``'s own key says it counts ``head``: a count key, or one naming them."""
    key = line.name.split()[-1] if line.name else ""
    own = known_words([key], [], language)
    return key.casefold() in language.count_keys or is_known(head, own, language)


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


__all__ = ["counted_things", "counting_what_was_asked", "counts", "says_how_many"]
