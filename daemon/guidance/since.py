"""A state held since a time, said as a person says it: "The front door has been closed since
12:50.", never "The front door since is 12:50." of ``{"door": "front", "state": "closed",
"since": "12:50"}``. The key that says from when is a word of the language (``since``), the
state is the object's other short text, and what holds it is the text that says which one (or,
with none, the skill's own words)."""

from __future__ import annotations

from collections.abc import Sequence

from edge_agentd.agent.clauses import normalised
from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import Line
from edge_agentd.guidance.labels import (
    key_words,
    prefix,
    qualifier,
    spell,
    unsaid_key,
    words_of,
)


def since_sentences(
    line: Line, lines: Sequence[Line], skill_name: str, question: Question
) -> list[str] | None:
    """The sentences of ``line`` when its key says since when the state beside it holds (none
    when no state is beside it: the time alone says nothing of what held); None for any other
    line, which is said as a value."""
    la = question.language
    key = line.name.split()[-1].casefold() if line.name else ""
    if key not in la.since or not isinstance(line.node, str) or not line.node.strip():
        return None
    named = qualifier(line, lines, la)
    if named is not None:
        thing = [named[0], *unsaid_key(key_words(named[1], la), named[0], la)]
    else:
        thing = key_words(skill_name, la)
    states = [
        other.node.strip()
        for other in lines
        if prefix(other) == prefix(line)
        and other is not line
        and isinstance(other.node, str)
        and other.name
        and other.name.split()[-1].casefold() not in la.since
        and (named is None or other.node.strip() != named[0])
        and 0 < len(words_of(other.node, la)) <= 2
        and la.letters.search(other.node)
    ]
    if not states or not thing:
        return []
    template = la.said_since[1 if la.plural(thing[-1]) else 0]
    label = spell(thing, question.text, la)
    return [template.format(label=label, state=states[0], value=line.node.strip())]


def said_by_its_time(line: Line, lines: Sequence[Line], question: Question) -> bool:
    """Whether a question asking when ("When was the window opened?", "Since when ...") is
    answered by the time beside ``line`` rather than by ``line`` itself: "The state is open."
    says nothing of when."""
    la = question.language
    asked = [w.casefold() for w in la.token.findall(normalised(question.text, la))[:2]]
    opener = asked[1:] if asked[:1] and asked[0] in la.since else asked[:1]
    if not opener or opener[0] not in la.when_asks:
        return False
    return any(
        other is not line
        and prefix(other) == prefix(line)
        and other.name.split()[-1].casefold() in la.since
        for other in lines
        if other.name
    )


__all__ = ["said_by_its_time", "since_sentences"]
