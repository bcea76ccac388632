"""A yes-or-no question that compares a value with a number or a share (docs/design.md, "One
model turn"): "Is the CPU warmer than 40 °C?", "Is more than half of the memory in use?". Read
without its comparison for what it asks about; each fitting value in the unit it names is said
after its "Yes" or "No". The comparison's words, and the shares a word names ("half"), are the
language's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from edge_agentd.agent.claims import compared_things
from edge_agentd.agent.language import Language
from edge_agentd.agent.question import Question, normalised
from edge_agentd.agent.resultlines import Line, reading_text
from edge_agentd.agent.vocabulary import is_known


@dataclasses.dataclass(frozen=True)
class Threshold:
    """A number the question compares a value with: over it (``above``) or under, in ``unit``
    (None: the question names none)."""

    above: bool
    number: float
    unit: str | None
    asking: Question
    """The question without its comparison: what it asks about."""


def threshold_of(question: Question) -> Threshold | None:
    """The number ``question`` compares a value with ("Is the CPU warmer than 40 °C?"), if it
    does with a comparison the language knows, as a yes-or-no question: one opening with a
    question word compares nothing ("What is the load average over 5 minutes?")."""
    la = question.language
    text = question.text
    opening = la.token.findall(normalised(text, la))[:1]
    if opening and opening[0].casefold() in la.question_words:
        return None  # "What is the load average over 5 minutes?" asks no yes or no
    # "Is more than half of the memory in use?": a share, in percent ("a quarter" is no unit).
    shared = la.share.search(text) if la.share is not None else None
    found = la.threshold.search(text) if la.threshold is not None and not shared else shared
    if found is None or (found is shared and found.group(3).casefold() not in la.shares):
        return None
    if found is shared:
        word, unit = (found.group(1) or found.group(2)).casefold(), "%"
        number = la.shares[found.group(3).casefold()]
    else:
        word = (found.group(1) or found.group(2) or "").casefold()
        unit = found.group(4)
        unit = "".join(unit.split()).casefold() if unit and not unit.isalpha() else unit
        written = found.group(3)
        if written.casefold() in la.one:
            if not unit:
                return None  # "more than an" names no amount of anything
            number = 1.0
        else:
            number = float(written)
    if word not in la.above and word not in la.below:
        return None
    after = text[found.end() :]
    if la.token.findall(after)[:1] == [la.of]:
        after = after.lstrip()[len(la.of) :]  # "more than 80 % of the disk": the disk
    asking = Question.parse(f"{text[: found.start()].rstrip()} {after.lstrip()}", la)
    return Threshold(word in la.above, number, unit, _compared_thing(asking, text[: found.start()]))


def asked_about(question: Question) -> Question:
    """``question`` as it names what it asks about: without the comparison with a number it
    makes ("Is the load average below 1?" asks about the load average)."""
    threshold = threshold_of(question)
    return threshold.asking if threshold is not None else question


def _compared_thing(asking: Question, before: str) -> Question:
    """``asking`` with the state the grammar read at the end of its phrase, where the
    comparison followed it, read as the phrase's head: "Is the soil moisture below 30 %?"
    compares the soil moisture; it asks no state "moisture" of the soil."""
    subject, state, la = asking.subject, asking.state, asking.language
    last = la.token.findall(before)[-1:]
    if subject is None or state is None or [w.casefold() for w in last] != [state.casefold()]:
        return asking
    phrase = dataclasses.replace(subject, which=(*subject.which, subject.head), head=last[0])
    return dataclasses.replace(asking, subject=phrase, state=None, predicate=())


def compared_lines(
    asking: Question,
    bound: Sequence[Line],
    others: Sequence[str],
    own: Callable[[Line], frozenset[str]],
) -> list[Line]:
    """The lines of ``bound`` a comparison may be of: none when the question without its
    comparison (``asking``) names no subject; where it has other words (``others``: "free" of
    "Is more than half of the memory free?"), only the lines whose own words (``own``) hold
    one, or its participle ("use" of ``used_percent``, ``charge`` of "charged"). A share used
    is no share free."""
    if asking.subject is None and not asking.parts:
        return []
    if not others:
        return list(bound)
    suffixes = ("", *asking.language.participle_suffixes)

    def forms(words: Iterable[str]) -> set[str]:
        return {f"{w.casefold()}{s}" for w in words for s in suffixes}

    asked = forms(others)
    return [line for line in bound if asked & forms(own(line))]


def compared_sentences(
    question: Question,
    threshold: Threshold,
    bound: Sequence[Line],
    say: Callable[[Line], list[str]],
) -> list[str]:
    """ "Yes, ..." or "No, ..." before the sentences ``say`` gives of each line of ``bound``
    whose value is a number in the threshold's unit (any, where it names none), compared
    with it. A unit the question names that the value is not written in compares nothing."""
    la = question.language
    said: list[str] = []
    for line in bound:
        value = line.node
        if isinstance(value, dict) and reading_text(value) is not None:
            value = value["value"]  # a reading: its value, in the unit beside it
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        written = "".join(line.shown.split()).casefold()
        # Or the unit its key ends with (``used_percent``).
        key = la.name_word.findall(line.name.split()[-1].casefold()) if line.name else []
        written += la.unit_suffixes.get(key[-1], "").casefold() if key else ""
        if threshold.unit is not None and not _written_in(written, threshold.unit, la):
            continue
        over = value > threshold.number if threshold.above else value < threshold.number
        answer = la.yes if over else la.no
        for sentence in say(line):
            lowered = sentence[:1].lower() + sentence[1:] if sentence[1:2].islower() else sentence
            said.append(la.said_compared.format(answer=answer, sentence=lowered))
    return said


def _written_in(written: str, unit: str, language: Language) -> bool:
    """Whether a value ``written`` with its unit (case folded, no spaces) is in ``unit``, as
    the question names it, its plural or its symbol ("percent" of "25%")."""
    names = language.forms(unit)  # "a day" of ``days``
    symbols = {language.unit_suffixes.get(name, name).casefold() for name in names}
    return any(name in written for name in names | symbols)


def which_compared(
    question: Question, lines: Sequence[Line], vocabulary: frozenset[str]
) -> list[str]:
    """The answer to "Which is colder, A or B?" where a result names the one that is: a text
    under a key the language reads as the same way of comparing ("lower" of a compare's result,
    for "colder"), said as "The <it> is colder."; and to "How much colder is A than B?", where
    the result also writes the difference: "The <it> is 35.875 °C colder." None otherwise,
    and none unless every word the question names its things with is one of ``vocabulary``
    (the result's and its call's): a compare of two other things says nothing of these."""
    la, subject = question.language, question.subject
    words = la.token.findall(question.text.casefold())
    if subject is None or len(words) < 3:
        return []
    head = subject.head.casefold()
    how_much = words[0] == la.how and words[1] in la.how_many and words[2] == head
    if words[0] not in la.what and not how_much:
        return []
    way = la.above if head in la.above else la.below if head in la.below else None
    if way is None:
        return []
    things = compared_things(question)
    if not things or not all(is_known(w, vocabulary, la) for w in things):
        return []
    ones = [
        line.node.strip()
        for line in lines
        if _key(line) in way and isinstance(line.node, str) and line.node.strip()
    ]
    if not how_much:
        return [la.said_which.format(it=it, compared=subject.head) for it in ones]
    differences = [
        line.shown.strip()
        for line in lines
        if _key(line) in la.difference_keys and not line.alternative and line.shown.strip()
    ]
    return [
        la.said_by.format(it=it, difference=difference, compared=subject.head)
        for it in ones[:1]
        for difference in differences[:1]
    ]


def whether_compared(
    question: Question, lines: Sequence[Line], words_of: Callable[[Line], frozenset[str]]
) -> list[str] | None:
    """The answer to "Is A colder than B?" where a result names the one that is (as
    :func:`which_compared` reads it): "Yes, the <it> is colder." where the words of that one
    (``words_of`` its text: its texts, what the skills call it) name A and not B, "No, ..."
    where they name B and not A, each time the other side (``lower``) naming the other thing;
    [] otherwise (``words_of`` is given the line that names it). None when the question
    compares no two things so (a number: "Is the CPU warmer than 40 °C?")."""
    la, subject = question.language, question.subject
    words = la.token.findall(question.text.casefold())
    if subject is None or not words or words[0] not in la.auxiliaries:
        return None
    at = next(
        (
            i
            for i, w in enumerate(words[:-1])
            if i > 1 and w in la.above | la.below and words[i + 1] == la.than
        ),
        None,
    )
    if at is None or threshold_of(question) is not None:
        return None
    way = la.above if words[at] in la.above else la.below
    first = [w for w in (*subject.which, subject.head) if la.letters.search(w)]
    second = [
        w
        for w in words[at + 2 :]
        if la.letters.search(w) and w not in la.determiners | la.ends_phrase
    ]
    other_way = (la.above | la.below) - way

    def named(line: Line, thing: list[str]) -> bool:
        known = words_of(line)
        return bool(thing) and all(is_known(w, known, la) for w in thing)

    texts = [line for line in lines if isinstance(line.node, str) and line.node.strip()]
    ones = [line for line in texts if _key(line) in way]
    others = [line for line in texts if _key(line) in other_way]
    said = []
    for one, other in zip(ones[:1], others[:1], strict=False):
        # Each thing is named by one side alone: the result then says which of the two it is.
        if named(one, first) and named(other, second) and not named(one, second):
            answer = la.yes
        elif named(one, second) and named(other, first) and not named(one, first):
            answer = la.no
        else:
            continue
        sentence = la.said_which.format(it=one.node.strip(), compared=words[at])
        lowered = sentence[:1].lower() + sentence[1:]
        said.append(la.said_compared.format(answer=answer, sentence=lowered))
    return said


def _key(line: Line) -> str:
    """``line``'s own key, case folded: the last part of its name."""
    return line.name.split()[-1].casefold() if line.name else ""


__all__ = [
    "Threshold",
    "asked_about",
    "compared_lines",
    "compared_sentences",
    "threshold_of",
    "whether_compared",
    "which_compared",
]
