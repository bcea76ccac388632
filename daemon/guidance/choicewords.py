"""What the skills call a thing a result names only by its id: "the 1-Wire probe DS18B20" of
``28-0316a2791bff``. A skill that lists its ready calls says what each gets, in its own words;
the words every listed call passing a value gets, less the words of the call's other values
(the quantity each reads), are that value's. A compare's result names each reading by its
sensor's id, which the question calls "the 1-Wire probe": its reading is then named so.

Built from the calls the skills list alone, for any skill."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from edge_agentd.agent.language import Language
from edge_agentd.agent.vocabulary import known_words

ChoiceWords = Mapping[str, frozenset[str]]
"""For a text a listed call passes, the words the skills say of the thing it names."""


def choice_words(calls: Iterable[tuple[Mapping[str, Any], str]], language: Language) -> ChoiceWords:
    """For each text value of ``calls`` (each its arguments and what it gets), the words every
    call passing it gets, less its other values' words and the prompt's own."""
    found: dict[str, frozenset[str]] = {}
    for arguments, what in calls:
        values = [v for v in arguments.values() if isinstance(v, str)]
        if not what:
            continue
        # A letter alone ("c" of "°C", "b" of "DS18B20") names nothing.
        said = {w for w in known_words([what], [], language) if len(w) > 1}
        said -= language.prompt_words
        for value in values:
            others = known_words([v for v in values if v != value], [], language)
            words = frozenset(said - others)
            found[value] = found[value] & words if value in found else words
    return {value: words for value, words in found.items() if words}


def with_choice_words(
    texts: dict[tuple[str, ...], list[str]], named: ChoiceWords
) -> dict[tuple[str, ...], list[str]]:
    """``texts`` (each object's short texts, :func:`~edge_agentd.guidance.labels.object_texts`)
    with the words ``named`` gives the one thing an object names by its id beside them. An
    object naming two (a compare's ``higher`` and ``lower``) is neither's."""
    if not named:
        return texts
    found = {}
    for path, said in texts.items():
        ids = {text for text in said if text in named}
        found[path] = [*said, *sorted(named[ids.pop()])] if len(ids) == 1 else said
    return found


__all__ = ["ChoiceWords", "choice_words", "with_choice_words"]
