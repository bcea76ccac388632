"""What an answer claims, set beside what the evidence holds (docs/design.md, "Grounding").

The tests :mod:`~edge_agentd.agent.grounding` runs on every answer, each on plain texts and
words, for any skill: the values an answer writes (numbers, texts with digits, units after a
number), the thing a question asks about (its subject, by the grammar of the language the
question was read in), a yes-or-no question's state, and whether a question asks about the
skills themselves.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from edge_agentd.agent.amounts import Amount, amount_of, amounts_in
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.evidence import answer_numbers, first_unwritten, one_text
from edge_agentd.agent.jsonvalues import inside, walk
from edge_agentd.agent.language import Language
from edge_agentd.agent.question import Question
from edge_agentd.agent.vocabulary import is_known

_VALUE_TOKEN = re.compile(r"[\w.:/+-]*\d[\w.:/+-]*")
"""A run of text with a digit in it, as a reader takes it whole: ``2026-12-05``, ``08:11``,
``BME280``, ``48.3``."""
_LABELS = re.compile(r"^(?:[^\W\d_]+[:/])+|(?:[:/][^\W\d_]+)+$")
_PLAIN_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_NEGATION_WINDOW = 3
"""How many words before a state word a negation turns it into its denial ("is not open")."""


def absent_value(answer: str, texts: Sequence[str], language: Language = ENGLISH) -> str | None:
    """The first value ``answer`` writes that ``texts`` do not hold, or None: a number not among
    theirs, a text with digits not written whole in one of them (an amount, "5-minute", is
    held by the same amount written any way: ``5min``), or a ``%`` or ``°`` unit after a
    number that the texts write with other units only."""
    evidence = one_text(texts)
    unwritten = first_unwritten(answer_numbers(answer), evidence)
    if unwritten is not None:
        return unwritten
    folded = evidence.casefold()
    held: set[Amount] | None = None
    for match in _VALUE_TOKEN.finditer(answer):
        # A word before or after a colon or slash is a label, not part of the value ("A:41.5").
        token, before = match.group().strip(".:/+-"), ""
        while token != before:
            token, before = _LABELS.sub("", token).strip(".:/+-"), token
        if _PLAIN_NUMBER.fullmatch(token) or "," in token:
            continue  # a number alone: its value was checked above
        if _written_whole(token.casefold(), folded):
            continue
        amount = amount_of(token, language)
        if amount is not None:
            held = set(amounts_in(evidence, language)) if held is None else held
            if amount in held:
                continue
        return token
    for match in _NUMBER_UNIT.finditer(answer):
        # A unit the evidence writes after this number, or none: a bare number of a skill that
        # says its unit in words ("in degrees Celsius") may take its sign; another reading's
        # unit may not ("41.5 °C" for "41.5 %RH").
        if not _unit_of(float(match.group(1)), match.group(2), evidence):
            return match.group()
    return None


_NUMBER_UNIT = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?) ?([%°][^\W\d_]*)")
"""A number and a unit after it that starts with a sign no word does (``%``, ``°C``)."""


def reading_units(node: dict[str, Any], language: Language = ENGLISH) -> list[tuple[str, float]]:
    """The units an object of a result gives its values, case folded, each with its value: what
    :func:`misplaced_unit` reads of it. A number's key may give it its unit (``used_percent:
    72.6`` is in %, as the engine says it), and so may a list's (``power_kw: [1, 2]``); a
    numeric ``value`` has its ``unit`` and ``unit_name``."""
    found: list[tuple[str, float]] = []
    for key, item in node.items():
        last = language.name_word.findall(str(key).casefold())[-1:]
        said = language.unit_suffixes.get(last[0]) if last else None
        # A list under such a key is of values in that unit too, as the engine says them, and
        # so are the lists inside it.
        for number in _list_items(item):
            if said and isinstance(number, int | float) and not isinstance(number, bool):
                found.append((said.casefold(), float(number)))
    value = node.get("value")
    if isinstance(value, int | float) and not isinstance(value, bool):
        for key in ("unit", "unit_name"):
            name = node.get(key)
            if isinstance(name, str) and name.strip():
                found.append((name.strip().casefold(), float(value)))
    return found


def _list_items(item: Any) -> list[Any]:
    """``item``'s items where it is a list, those of the lists inside it too, in order (read
    without recursion: a result may nest lists as deep as its size allows); else ``[item]``."""
    found: list[Any] = []
    stack: list[Any] = [item]
    while stack:
        top = stack.pop()
        if isinstance(top, list):
            stack.extend(reversed(top))
        else:
            found.append(top)
    return found


def misplaced_unit(
    answer: str, readings: Iterable[tuple[str, float]], question: str = ""
) -> str | None:
    """A unit or unit name the results' ``readings`` (:func:`reading_units`, in the results'
    order) and ``question`` give only to other values, written just after a number of
    ``answer`` ("48.312 °C (Fahrenheit)" when only 118.96 is in Fahrenheit), as the answer
    writes the two; None when there is none."""
    units: dict[str, set[float]] = {}
    for number, unit in _NUMBER_UNIT.findall(question):
        units.setdefault(unit.casefold(), set()).add(float(number))
    for name, value in readings:
        units.setdefault(name, set()).add(value)
    for name, values in units.items():
        for mention in re.finditer(rf"(?<![^\W_]){re.escape(name)}(?![^\W_])", answer, re.I):
            # A bounded look back: an answer of any length is checked in linear time.
            near = answer[max(0, mention.start() - 120) : mention.start()].split()[-_UNIT_WINDOW:]
            numbers = answer_numbers(" ".join(near))
            if numbers and float(numbers[-1].replace(",", "")) not in values:
                return f"{numbers[-1]} … {mention.group()}"
    return None


_UNIT_WINDOW = 3
"""How many words before a unit's name the number it is written for may stand."""


def _written_whole(token: str, text: str) -> bool:
    """Whether ``token`` stands in ``text`` with no letter or digit glued to either side."""
    start = text.find(token)
    while start != -1:
        end = start + len(token)
        if (start == 0 or not text[start - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        ):
            return True
        start = text.find(token, start + 1)
    return False


def _unit_of(value: float, unit: str, text: str) -> bool:
    """Whether ``text`` writes ``unit`` (or a unit it begins) after ``value``, or no unit after
    it at all: ``text`` is read only until it writes the unit."""
    other = False
    for match in _NUMBER_UNIT.finditer(text):
        if float(match.group(1)) == value:
            if match.group(2).startswith(unit):
                return True
            other = True
    return not other


def unnamed_things(question: Question, vocabulary: frozenset[str]) -> str | None:
    """The words a comparison's question names its things with ("the CPU or the garage" of
    "Which is warmer, the CPU or the garage?") that ``vocabulary`` does not name, or None:
    an answer of a run that read neither of them rests on nothing. Not a comparison: None."""
    subject, language = question.subject, question.language
    if subject is None or not _comparative(subject.head, question.text, language):
        return None
    unnamed = [w for w in compared_things(question) if not is_known(w, vocabulary, language)]
    return " ".join(unnamed) or None


def unnamed_subject(question: Question, vocabulary: frozenset[str]) -> str | None:
    """The words of ``question``'s subject the evidence does not name, as the question writes
    them, when they make it unknown: a word that says which one that is not named, or a head
    not named when no other word of the subject is. None: named, or no subject. A question in
    two parts joined by "and" has an unknown subject when each part does (the answer may say
    what it cannot tell of one part beside the other's value)."""
    if question.parts:
        found = [_unnamed_in(part, vocabulary) for part in question.parts]
        if any(f is None for f in found):
            return None
        both = question.language.said_both
        return functools.reduce(lambda a, b: both.format(first=a, second=b), map(str, found))
    return _unnamed_in(question, vocabulary)


def _unnamed_in(question: Question, vocabulary: frozenset[str]) -> str | None:
    subject, language = question.subject, question.language
    if subject is None or subject.head.casefold() in language.indefinite:
        return None  # "How warm is everything?" names no one thing
    if _comparative(subject.head, question.text, language):
        return None  # "Which is warmer, the CPU or the probe?": the things follow it
    word_of = language.word

    # The device the daemon runs on is one thing by any of its words: "this device" of a
    # skill names "the Pi" of the question.
    device = bool(vocabulary & language.itself)

    def named(word: str) -> bool:
        return (
            not word_of.search(word)
            or is_known(word, vocabulary, language)
            or _ends_one(word, vocabulary)
            or (device and word.casefold() in language.itself)
        )

    which = [w for w in subject.which if not named(w)]
    if which:
        return " ".join([*which, subject.head])
    doer = [w for w in subject.doer if not named(w)]
    if doer:
        # "the power the solar panels produce" where only a house meter's power is read.
        return " ".join([*subject.doer, subject.head])
    # What says which one may follow the head too: the thing it is of, by its words that say
    # which ("the soil of the tomato plant" beside the basil's) or, a single word, by itself
    # ("the date of Wednesday" beside today's, "the temperature of the garage" beside the
    # CPU's), and the place it is in ("the CO2 level in the bedroom" beside the living room's).
    # A word with a digit in it there is a name of a kind or a part ("the ID of the 1-Wire
    # sensor"), which results often spell otherwise ("w1"): it does not decide.
    after = [*(subject.of[:-1] if len(subject.of) >= 2 else subject.of), *subject.where]
    unnamed_after = [w for w in after if not named(w) and not any(c.isdigit() for c in w)]
    if unnamed_after:
        return " ".join([*subject.which, subject.head, *unnamed_after])
    others = [w for w in (*subject.which, *subject.of, *subject.owner) if word_of.search(w)]
    if named(subject.head) or any(named(w) for w in others):
        return None
    qualities = quality_nouns(subject.head, language)
    if subject.quality == subject.head and any(named(n) for n in qualities):
        return None  # "How warm is it?" and a temperature
    return " ".join(subject.words)


def quality_nouns(adjective: str, language: Language = ENGLISH) -> tuple[str, ...]:
    """The nouns of the quantity ``adjective`` asks about ("temperature" of "warm"), or ()."""
    return language.quality_nouns.get(adjective.casefold(), ())


def compares_things(question: Question) -> bool:
    """Whether ``question`` asks which of the things it names is the more so ("Which is warmer,
    the CPU or the probe?"): its head is the comparison, and its things follow it."""
    subject = question.subject
    return subject is not None and _comparative(subject.head, question.text, question.language)


def _comparative(head: str, query: str, language: Language) -> bool:
    """Whether ``head`` is a comparison the question goes on to name the things of: "warmer"
    before a comma or "than" ("Which is warmer, the CPU or the probe?"), or "than" after the
    things it compares ("How much cooler is the probe than the CPU?")."""
    if not head.casefold().endswith(language.comparative_suffix):
        return False
    than = re.escape(language.than)
    at = re.search(rf"(?<![^\W_]){re.escape(head)}(?![^\W_])", query)
    if at is None:
        return False
    after = query[at.end() :]
    return re.match(r"\s*,", after) is not None or re.search(rf"\b{than}\b", after) is not None


def compared_things(question: Question) -> list[str]:
    """The words a comparison's question names its things with, after its comparative ("the
    CPU or the probe" of "Which is warmer, the CPU or the probe?"): none of the grammar's."""
    language, subject = question.language, question.subject
    words = language.token.findall(question.text.casefold())
    head = subject.head.casefold() if subject is not None else ""
    if head not in words:
        return []
    return [
        w
        for w in words[words.index(head) + 1 :]
        if language.letters.search(w) and w not in language.determiners | language.ends_phrase
    ]


def _ends_one(word: str, vocabulary: frozenset[str]) -> bool:
    """Whether ``word`` (five letters or more) ends a word of ``vocabulary`` glued from several,
    as identifiers are: "relative" of the channel ``in_humidityrelative``."""
    folded = word.casefold()
    return (
        len(folded) >= 5
        and folded.isalpha()
        and any(len(v) > len(folded) and v.endswith(folded) for v in vocabulary)
    )


def state_claim(answer: str, state: str, language: Language = ENGLISH) -> bool | None:
    """Whether ``answer`` says its subject is in ``state`` (True), is not (False), or neither
    (None): the state word with no negation in the few words before it, else a first "yes" or
    "no"."""
    words = [w.casefold() for w in language.word.findall(answer)]
    forms = language.forms(state)
    negations, suffix = language.negations, language.negation_suffix
    for index, word in enumerate(words):
        if word in forms:
            before = words[max(0, index - _NEGATION_WINDOW) : index]
            return not any(w in negations or (suffix and w.endswith(suffix)) for w in before)
    if words and words[0] == language.yes.casefold():
        return True
    if words and words[0] == language.no.casefold():
        return False
    return None


def holds_state(results: Iterable[Any], state: str, language: Language = ENGLISH) -> bool:
    """Whether a result says ``state``: a text of it with the word, or a true flag named so."""
    found = False

    def said(text: str) -> bool:
        return state in {w.casefold() for w in language.word.findall(text.replace("_", " "))}

    def visit(node: Any, key: str) -> list[tuple[Any, str]]:
        nonlocal found
        if isinstance(node, bool):
            found = found or (node and said(key))
        elif isinstance(node, str):
            found = found or said(node)
        if isinstance(node, dict):
            return [(item, str(name)) for name, item in node.items()]
        return inside(node, key)

    for result in results:
        walk(result, visit, "")
    return found


def names_a_skill(answer: str, skills: Sequence[str]) -> bool:
    """Whether ``answer`` writes one of ``skills``' names whole."""
    return any(_written_whole(name.casefold(), answer.casefold()) for name in skills)


__all__ = [
    "absent_value",
    "compared_things",
    "compares_things",
    "holds_state",
    "misplaced_unit",
    "names_a_skill",
    "quality_nouns",
    "reading_units",
    "state_claim",
    "unnamed_subject",
    "unnamed_things",
]
