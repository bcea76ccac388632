"""What a rendered sentence calls a result's line (docs/design.md, "Small models", "Rendered
answers"): the thing by its label or the skill's words, as a person says it.

A line's label is its own key, its whole name when each part of it is a key, a list item's
name before the key, what its object calls itself before the key, the skill's name for a bare
value, or the question's own subject when the line's labels hold each of its words
(:func:`labels`). Each is then *spoken* (:func:`spoken`): a key's words, never its ``_``, and
a number's key that ends in a unit (``charging_power_kw``, ``available_mib``,
``state_of_charge_percent``, ``uptime_s``) loses that word to the value's unit ("The charging
power is 7.2 kW.", "The state of charge is 64 %.", a duration "3600 seconds"); a word that
says only how a value is written (``text`` of ``uptime text``) is dropped. A label left with
no word is its object's or its skill's. The unit words and form words are the language's
(:class:`~edge_agentd.agent.language.Language`), never a skill's or a key's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edge_agentd.agent.amounts import amount_of, said_amount
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.jsonvalues import inside, walk
from edge_agentd.agent.language import Language
from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import Line, is_number, item_label, reading_text

MAX_LABEL_WORDS = 6
"""A label longer than this (a deep path) is not offered: its last key or a sibling says it."""
PLACEHOLDER = frozenset({"value", "items"})
"""The names :func:`~edge_agentd.agent.resultlines.result_line_parts` gives a line with no key
of its own (a bare reading, a bare list): the skill's name says what it is instead."""


def words_of(text: str, language: Language = ENGLISH) -> list[str]:
    """The words of ``text`` as a label uses them: runs of letters and digits (``available_mib``
    gives "available" and "mib")."""
    return language.name_word.findall(text)


def key_words(text: str, language: Language = ENGLISH) -> list[str]:
    """The words of a key or a name that a label may use: those with a letter, not opening with
    a digit (the "1" of a key ``_1``, or of ``_1a``, would read as a number the result does not
    state) unless the key opens with it or it is an amount (``1min`` of a load average: its 1
    is a number the result's line states, said "1-minute")."""
    found = words_of(text, language)
    return [
        w
        for index, w in enumerate(found)
        if language.letters.search(w)
        and (
            not w[0].isdigit()
            or (index == 0 and text.startswith(w))
            or amount_of(w, language) is not None
        )
    ]


def spoken(
    label: Sequence[str], node: Any, language: Language = ENGLISH
) -> tuple[list[str], str | None]:
    """``label`` as a person says it of a line showing ``node``, and the unit its value takes
    from it: a word that says only the value's form dropped, for a number, a last word that
    is a unit (after another word) taken off as the unit ("charging power", "kW"), and an
    amount a key glues into a word said first, as an amount before a noun ("5-minute load
    average" of ``load_average 5min``)."""
    said = [w for w in label if w.casefold() not in language.form_words] or list(label)
    amounts = [a for w in said if (a := said_amount(w, language)) is not None]
    rest = [w for w in said if said_amount(w, language) is None]
    if not amounts or not rest:
        amounts, rest = [], said  # an amount alone is its label as the key writes it
    unit = None
    units = language.unit_suffixes
    if is_number(node) and len(rest) >= 2 and rest[-1].casefold() in units:
        unit = units[rest[-1].casefold()]
        rest = rest[:-1]
    return [*amounts, *rest], unit


def _says_nothing(label: Sequence[str], node: Any, language: Language) -> bool:
    """Whether each word of ``label`` says only a value's form, or which one by a number
    (``1min``), or, for a number, its unit: it names no thing by itself."""
    number = is_number(node)
    return all(
        w.casefold() in language.form_words
        or w[0].isdigit()
        or (number and w.casefold() in language.unit_suffixes)
        for w in label
    )


def spell(label: Sequence[str], question: str, language: Language = ENGLISH) -> str:
    """``label``'s words, each as the question spells it where the question has it ("CPU" for
    a key's "cpu")."""
    found = words_of(question, language)
    # The question's first word is capitalised as a sentence opens, not as the word is spelt:
    # "Humidity?" gives no "The Humidity is ...".
    opening = found[0] if found and found[0][1:].islower() else None
    spelled = {w.casefold(): w for w in found if language.letters.search(w) and w != opening}
    return " ".join(spelled.get(w.casefold(), w.lower() if w == opening else w) for w in label)


def prefix(line: Line) -> tuple[str, ...]:
    """The path of the object ``line`` is in."""
    return tuple(line.name.split()[:-1])


def qualifier(
    line: Line, lines: Sequence[Line], language: Language = ENGLISH
) -> tuple[str, str] | None:
    """``(value, key)`` of the first short text of the object ``line`` is in, when that is not
    ``line`` itself: what the object calls itself, as a list item's line does (``front`` of
    ``{"door": "front", "state": "closed"}``). One without a letter (a date) names nothing."""
    if isinstance(line.node, list):
        return None  # a list is named by its own key: "There are 2 bme280" says nothing
    for other in lines:
        node = other.node
        if prefix(other) != prefix(line) or not isinstance(node, str) or not other.name:
            continue
        if other.name.split()[-1].casefold() in language.form_words | language.state_keys:
            # A value written out ("33 min" of ``text``) is no name of its object, nor is the
            # state it is in ("running" of ``state``: never "The running state time left").
            continue
        short = 0 < len(node.strip()) <= 40 and len(words_of(node, language)) <= 3
        fits = short and language.letters.search(node)
        if other == line or not fits:
            return None
        return node.strip(), other.name.split()[-1]
    return None


def unsaid_key(key: list[str], value: str, language: Language) -> list[str]:
    """``key``'s words, or none when ``value`` already ends with them: "living room" of
    ``{"room": "living room"}`` says which room, never "living room room"."""
    said = [w.casefold() for w in words_of(value, language)]
    own = [w.casefold() for w in key]
    return [] if own and said[-len(own) :] == own else key


def object_texts(lines: Sequence[Line]) -> dict[tuple[str, ...], list[str]]:
    """For each object's path, its short texts with their keys: what the object says of itself
    ("bme280", "humidity" of ``{"sensor": "bme280", "quantity": "humidity", ...}``). Read once
    a result, so a result of thousands of lines is read in one pass."""
    found: dict[tuple[str, ...], list[str]] = {}
    for line in lines:
        node = line.node
        if isinstance(node, str) and len(node) <= 40:
            key = line.name.split()[-1] if line.name else ""
            found.setdefault(prefix(line), []).extend([node, key])
        elif isinstance(node, list):
            # A reading in a list is shown as one line, its texts in none: they are its own
            # (a compared reading's ``label: DS18B20``), under the path its line is named by.
            for index, item in enumerate(node):
                if isinstance(item, dict) and reading_text(item) is not None:
                    at = tuple(f"{line.name} {item_label(item, '', index)}".split())
                    texts = [[v, str(k)] for k, v in item.items() if isinstance(v, str)]
                    found.setdefault(at, []).extend(t for pair in texts for t in pair)
    return found


def reading_of(form: Line, lines: Sequence[Line]) -> Line:
    """The reading line another form's line belongs to (stated in the asked form, under the
    reading's own labels), or the form's line itself when there is none."""
    for line in lines:
        node = line.node
        if not line.alternative and isinstance(node, dict) and form.node in node.values():
            return line
    return form


def keys_of(node: Any) -> set[str]:
    """Every key of the objects in ``node``."""
    found: set[str] = set()

    def visit(item: Any, at: None) -> list[tuple[Any, None]]:
        if isinstance(item, dict):
            found.update(str(key) for key in item)
        return inside(item, None)

    walk(node, visit, None)
    return found


def labels(
    line: Line, lines: Sequence[Line], skill_name: str, question: Question, keys: set[str]
) -> list[list[str]]:
    """The labels a line's value may be stated under (see the module's docstring), each as its
    key's words (:func:`spoken` says them). The line's whole name is one only when each part of
    it is a key: a list item's part is its value ("sensors 28-0316a2791bff measures"), no
    label. A key that is only a unit or a form word (``seconds``, ``text``) is said as what its
    object is: the path before it, or the skill."""
    language = question.language
    whole = all(part in keys for part in line.name.split())
    name = key_words(line.name, language) if whole else []
    key = key_words(line.name.split()[-1], language) if line.name.split() else []
    skill = key_words(skill_name, language)
    last = line.name.split()[-1:] if line.name not in PLACEHOLDER else []
    item = bool(last) and last[0] not in keys and "[" not in last[0]
    by_id = item and key_words(last[0], language) != words_of(last[0], language)
    if by_id:
        # A list item named by an id ("28-0316a2791bff" of a compare's ``readings``), whose
        # words a label may use drop its digits ("t" of "t-01"): the id whole, which a person
        # reads as the thing's name; not the skill's.
        key = last
    own = key if key and line.name not in PLACEHOLDER else skill
    if own and not by_id and _says_nothing(own, line.node, language):
        # "seconds" or "text" alone says no thing: the object's path does, or the skill.
        own = [*((key_words(" ".join(prefix(line)), language) if whole else []) or skill), *own]
    found = [own, name if line.name not in PLACEHOLDER else skill]
    # A part of the name that is no key is a list item's own name ("fern" of ``plants fern
    # moisture``): it says which one, taken whole ("The fern moisture is 58.0 %.").
    # An item with no name is shown by its place ("[1]"): a number no result states.
    items = [p for p in line.name.split()[:-1] if p not in keys and "[" not in p]
    if items:
        found.append([items[-1], *own])
    named = qualifier(line, lines, language)
    heads = {w.casefold() for w in own}
    if named is not None:
        # The text whole, as the result writes it ("28-0316a2791bff", "washing machine"), and
        # always before the line's own key: "The temperature quantity difference is 25.6 °C",
        # never "The temperature is 25.6 °C" of a difference.
        value, sibling_key = named
        which = [value, *unsaid_key(key_words(sibling_key, language), value, language)]
        # A bare value is the object's own ("The bme280 sensor is 61.0.").
        found.append(which if line.name in PLACEHOLDER else [*which, *own])
        if isinstance(line.node, str):
            # A state is the state of what the object is: the "door" of ``{"door": "front"}``.
            heads |= {w.casefold() for w in key_words(sibling_key, language)}
    itself: list[str] = []
    if named is None and not prefix(line) and _a_state(line, language):
        # A state at the top of a result is the state of what the skill reports on: "The
        # washing machine is running." of ``washing_machine``'s ``state``.
        itself = skill
        heads |= {w.casefold() for w in skill}
    # The question's subject, when the line's own label and what says which one hold each of
    # its words (or their plural or singular), its head the line's key or, for a state, what
    # the object is: the label then claims nothing the result does not ("CPU temperature" of
    # ``cpu_temperature``, "front door" of a front door's state; never "air pressure" of
    # ``humidity``, nor "temperature" of a difference of temperatures).
    subject = question.subject
    if subject is not None and (subject.which or subject.of) and isinstance(line.node, dict):
        # A reading in a list is called what the question calls it, where one of its own texts
        # says so ("DS18B20" of a reading labelled so, whose list name is a serial number).
        says_which = {w.casefold() for w in (*subject.which, *subject.of)}
        own_texts = object_texts(lines).get(tuple(line.name.split()), [])[::2]
        called = [
            [text.strip()]
            for text in own_texts
            if language.letters.search(text)
            and says_which & {w.casefold() for w in words_of(text, language)}
        ]
        if called:
            return called
    if subject is not None:
        held = [*own, *itself, *(w for label in found[2:] for w in label)]
        vocabulary = {w.casefold() for text in held for w in words_of(text, language)}
        # "state of charge" whole: its "of" phrase is part of what it names.
        phrase = (*subject.which, subject.head, *((language.of, *subject.of) if subject.of else ()))
        asked = [w for word in phrase for w in words_of(word, language)]
        forms = language.forms
        if asked and all(forms(w) & vocabulary for w in asked) and forms(asked[-1]) & heads:
            # Which one a key's amount says is said too: "the load average" of ``5min`` is
            # only one of them.
            which = [w for w in own if amount_of(w, language) and w not in asked]
            found.append([*which, *asked])
            if itself:
                # Said of the thing itself ("The washing machine is running."), never of its
                # field ("The state is running.").
                return [[*which, *asked]]
    kept: dict[tuple[str, ...], None] = {}
    for label in found:
        if label and len(label) <= MAX_LABEL_WORDS:
            kept.setdefault(tuple(label), None)
    return [list(label) for label in kept]


def _a_state(line: Line, language: Language) -> bool:
    """Whether ``line`` is a text under a key that by convention holds a state."""
    key = line.name.split()[-1].casefold() if line.name else ""
    return isinstance(line.node, str) and key in language.state_keys


__all__ = [
    "MAX_LABEL_WORDS",
    "PLACEHOLDER",
    "key_words",
    "keys_of",
    "labels",
    "object_texts",
    "prefix",
    "qualifier",
    "reading_of",
    "spell",
    "spoken",
    "words_of",
]
