"""Whether a result lists what a question asks is there (docs/design.md, "Grounding" and
"Small models"): "Does this device have a pressure sensor?" is answered by a listing whose entry
holds every word of what was asked, in its own keys and texts or in the keys on its path
(``sensors`` [{``name``: ``bme280``, ``measures``: [{``quantity``: ``pressure``}]}]).

An entry is an object in a list; what encloses it says nothing of it but the keys that lead to it,
so a listing's filter (``quantity: humidity`` beside its ``sensors``) or a call's argument is no
entry's word, and an empty listing lists nothing. Words of results only: nothing here knows a
skill.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from edge_agentd.agent.jsonvalues import walk
from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import item_label
from edge_agentd.agent.vocabulary import is_known, known_words


def listed_things(question: Question, results: Iterable[Any]) -> list[str]:
    """The names of the entries of ``results`` that are what ``question`` asks about: each word
    of its subject (and of a place it names) is a word of the entry or of the keys on its path.
    The outermost such entry is named, not the entries inside it; one with no name of its own
    (named only by its place in its list) is not, nor one of a list no key names."""
    subject, language = question.subject, question.language
    if subject is None:
        return []
    asked = [w for w in (*subject.words, *subject.where) if language.letters.search(w)]
    if not asked:
        return []
    found: dict[str, None] = {}

    def visit(node: Any, path: frozenset[str]) -> list[tuple[Any, frozenset[str]]]:
        if isinstance(node, dict):
            return [(v, path | known_words([str(k)], [], language)) for k, v in node.items()]
        if not isinstance(node, list):
            return []
        further = []
        if not path:
            return [(item, path) for item in node]  # a list no key names lists nothing
        for index, item in enumerate(node):
            words = path | known_words([], [item], language)
            if isinstance(item, dict) and all(is_known(w, words, language) for w in asked):
                name = item_label(item, "", index)
                if not name.startswith("["):
                    found.setdefault(name, None)
                continue  # what it holds is its own, not another entry
            further.append((item, path))
        return further

    for result in results:
        start: frozenset[str] = frozenset()
        walk(result, visit, start)
    return list(found)


__all__ = ["listed_things"]
