"""Answers the engine states from the results (docs/design.md, "Small models").

A small model that writes its own answer makes claims with its free words, even when every
digit is bound to the evidence: "The CPU is overheating: 51.687 °C.", "Yes, the front door is
open." for a result that says ``closed``. So the engine writes the sentences and a model only
chooses among them, by its likelihood of each, whole, as its reply
(:class:`~edge_agentd.guidance.guidance.Guidance`), or, where one fits, the engine says it.
Every sentence is built from a result's lines (:mod:`~edge_agentd.agent.resultlines`, each
said by :mod:`~edge_agentd.guidance.saying`), the names and words of the skills that gave them,
and the question, with a few words of the engine's own (the language's
:attr:`~edge_agentd.agent.language.Language.own_words`, its sentences said in the language the
question was read in), as a person says them:

- **A reading, a number or a text**: "The <label> is <value> <unit>.", the label spoken
  (:mod:`~edge_agentd.guidance.labels`): "The charging power is 7.2 kW." of
  ``charging_power_kw``, "The memory available is 2587.9 MiB.", "The state of charge is
  64 %.", "The uptime is 3600 seconds.", "The front door is closed.".
- **A flag**: "Plugged in: yes."; to a yes-or-no question, "Yes, the car is plugged in." or
  "No, the front door is closed." (:mod:`~edge_agentd.guidance.fitting`).
- **A list**: its names ("The sensors are cpu, bme280 and probe."), or, to a how-many
  question, its count ("There are 3 sensors.").
- **A skill's own way** of saying its result (``says="The {label} reads {value}."``): the
  fields ``{label}`` and ``{value}`` (with its unit), no digit; one that does not fit is
  ignored.
- **"I cannot tell: no skill here reads the garage door."**, or the skill's own error
  (:func:`cannot_tell_sentence`).

The API, for the loop and the guidance:

- ``fitting_sentences(question, results, skills=None, called=()) -> list[str]``: ``results``
  are ``(skill_name, result)`` pairs of the run's calls that returned one; ``skills`` looks a
  skill up by name (a :class:`~edge_agentd.agent.registry.Registry` or a mapping of specs) for
  its description and its ``says``; ``called``, optional, beside each result the words of the
  call that gave it (its arguments' values, what a listed call gets). Only the sentences
  about what the question asks: its subject named by each sentence's own label source; []
  when none is, and for a yes-or-no question whose state no result writes. With no subject,
  every sentence (the model chooses).
- ``bound_sentences(asked, question, skills=None)``: the same, of the lines given for each
  result (``(skill_name, result, lines)``), as the guidance narrows them.
- ``cannot_tell_sentence(question, reason=None, *, results=False) -> str`` (declines),
  always beginning "I cannot tell".
- ``sentences_for(asked, question)``: every sentence of the lines given, unbound.

Nothing here knows any skill or any question word: keys, texts and names are the results'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from edge_agentd.agent.claims import compares_things, unnamed_things
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.language import Language
from edge_agentd.agent.numbers import unstated_number
from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import Line, result_line_parts
from edge_agentd.agent.vocabulary import known_words
from edge_agentd.guidance.asked import candidate_lines
from edge_agentd.guidance.choicewords import ChoiceWords, with_choice_words
from edge_agentd.guidance.compared import compared_lines, whether_compared, which_compared
from edge_agentd.guidance.empty import none_listed, none_there
from edge_agentd.guidance.fitting import (
    asks_existence,
    bound_lines,
    compared_sentences,
    names_subject,
    other_words,
    own_words,
    threshold_of,
    yes_no_sentences,
)
from edge_agentd.guidance.labels import keys_of, object_texts, prefix, reading_of
from edge_agentd.guidance.saying import clean, line_sentences, says_template
from edge_agentd.guidance.whose import names_its_readings, of_another_choice

MAX_SENTENCES = 32
"""The most sentences offered for one part of an answer: each is a branch the model scores."""


class Skills(Protocol):
    """What the renderer reads of the skills: a spec by name (a Registry, a dict of specs)."""

    def get(self, name: str, /) -> Any: ...


def sentences_for(
    asked: Sequence[tuple[str, Any, Sequence[Line]]],
    question: Question,
    says: Mapping[str, str | None] | None = None,
    fit: bool = False,
) -> list[str]:
    """The sentences stating the ``asked`` lines, each given as ``(skill_name, result, lines)``
    (the lines of that result the question asks about), at most :data:`MAX_SENTENCES`."""
    found: dict[str, None] = {}
    for skill_name, result, chosen in asked:
        lines = result_line_parts(result, question.language)
        keys = keys_of(result)
        template = says_template((says or {}).get(skill_name))
        # Each line renders a sentence or more: a result of thousands of lines is stated from
        # its first few asked ones, as its turn shows only its first lines.
        for asked_line in list(chosen)[:MAX_SENTENCES]:
            line = reading_of(asked_line, lines) if asked_line.alternative else asked_line
            for sentence in line_sentences(
                line, lines, skill_name, question, keys, says=template, fit=fit
            ):
                if clean(sentence):
                    found.setdefault(sentence, None)
    return list(found)[:MAX_SENTENCES]


def _skill_words(
    skills: Skills | None, name: str, language: Language
) -> tuple[frozenset[str], str | None]:
    """A skill's words (its name, description and examples) and its ``says``, as ``skills``
    has them."""
    spec = skills.get(name) if skills is not None else None
    description = getattr(spec, "description", "")
    examples = getattr(spec, "examples", ())
    # ``says`` is an option a skill may declare (SkillOptions.says); read where it is.
    says = getattr(getattr(spec, "options", None), "says", None)
    texts = [t for t in (description, *examples) if isinstance(t, str)]
    return known_words([name, *texts], [], language), says_template(says)


def bound_sentences(
    asked: Sequence[tuple[str, Any, Sequence[Line]]],
    question: Question,
    skills: Skills | None = None,
    called: Sequence[Iterable[str]] = (),
    named: ChoiceWords | None = None,
) -> list[str]:
    """The sentences of the ``asked`` lines about what ``question`` asks (see the module's
    docstring); for a question in two parts, one of each part joined where both have some.
    ``called``, beside each result, the words of the call that gave it (its arguments, what a
    listed call gets): the skill's words, for that result. ``named``, what the skills call a
    thing a result names by its id (:mod:`~edge_agentd.guidance.choicewords`)."""
    named = named or {}
    if question.parts:
        first, second = (
            bound_sentences(asked, part, skills, called, named) for part in question.parts
        )
        if first and second:
            joined = [both_parts(a, b, question.language) for a in first for b in second if a != b]
            return [s for s in joined if clean(s)][:MAX_SENTENCES]
        return first or second
    if unstated_number(question, [result for _, result, _ in asked], called) is not None:
        return []  # "in 10 days" of a clock's reading: the day asked is not the one it read
    said_which = [
        sentence
        for index, (name, result, _) in enumerate(asked)
        for sentence in which_compared(
            question,
            result_line_parts(result, question.language),
            known_words([name, *(called[index] if index < len(called) else ())], [result]),
        )
    ]
    if said_which:
        return said_which[:MAX_SENTENCES]  # "Which is colder, A or B?": the one a result names
    whether = [
        whether_compared(question, lines, _thing_words(lines, named, question.language))
        for lines in (result_line_parts(result, question.language) for _, result, _ in asked)
    ]
    if any(found is not None for found in whether):
        # "Is A colder than B?": yes or no, where a result names the one that is; else nothing.
        return [s for found in whether for s in found or () if clean(s)][:MAX_SENTENCES]
    if compares_things(question):
        # A thing compared that no result or call names: no sentence here is about it.
        known = frozenset().union(
            *(
                known_words([name, *(called[index] if index < len(called) else ())], [result])
                | _skill_words(skills, name, question.language)[0]
                | _ids_named(result, named, question.language)
                for index, (name, result, _) in enumerate(asked)
            )
        )
        if unnamed_things(question, known) is not None:
            return []
    threshold = threshold_of(question)
    if threshold is not None:
        # "Is the tank's level below 80 %?" asks about the tank's level, compared: read
        # without the comparison, the question names its subject.
        question = threshold.asking
    found: dict[str, None] = {}
    yes_no = threshold is None and (question.state is not None or asks_existence(question))
    language = question.language
    for index, (skill_name, result, chosen) in enumerate(asked):
        lines = result_line_parts(result, language)
        own, says = _skill_words(skills, skill_name, language)
        call = known_words(called[index], [], language) if index < len(called) else frozenset()
        if names_its_readings(lines):
            # Each reading says which thing it is (a compare's two): the call, which names
            # them all, says of none which it is.
            call = frozenset()
        # A result of another of the skill's choices than the question names (a sensor's
        # temperature, asked its humidity): the skill's words, which name every choice, say
        # none of its lines is what was asked.
        spec = skills.get(skill_name) if skills is not None else None
        words = call if of_another_choice(spec, result, question) else own | call
        # What names the thing this very call's result is of: its arguments and what it gets,
        # not the skill's words every call of it has ("RAM" of an example names no line).
        call = call - own - language.prompt_words
        bound = bound_lines(question, chosen, lines, words, call_words=call, ids=named)
        if yes_no:
            # Every line: the state the question names ("closed" of "Is the door closed?") is
            # one a line it asks about may hold, not a text it already states.
            every = [line for line in lines if not line.alternative]
            bound = bound_lines(
                question, every, lines, words, narrow=False, call_words=call, ids=named
            )
            # A state is the skill's own word, never one the call passed ("humidity" asked of
            # a listing is no state of a sensor).
            said = yes_no_sentences(question, bound, lines, own, result)
            # "Are any sensors connected?" of an empty listing of them: none is.
            said = said or none_there(question, result, call)
        elif threshold is not None:
            # "Is the CPU warmer than 40 °C?": a value's sentence, said after its yes or no.
            def say(
                line: Line, name: str = skill_name, of: Any = result, said_as: Any = says
            ) -> list[str]:
                return sentences_for([(name, of, [line])], question, {name: said_as}, fit=True)

            texts = with_choice_words(object_texts(lines), named)

            def of_line(line: Line, texts: Any = texts, skill: Any = words) -> frozenset[str]:
                # As it was bound: a line no word of its own names is its skill's.
                own = own_words(line, texts, language)
                return own if names_subject(question, own) else own | skill

            compared = compared_lines(question, bound, other_words(question), of_line)
            said = compared_sentences(question, threshold, compared, say)
        else:
            group = [(skill_name, result, bound)]
            # "There are no sensors." says an empty list's count, and more than "The count is 0.".
            said = none_listed(question, result, call)
            said = said or sentences_for(group, question, {skill_name: says}, fit=True)
        for sentence in said:
            if clean(sentence):
                found.setdefault(sentence, None)
    return list(found)[:MAX_SENTENCES]


def fitting_sentences(
    question: Question,
    results: Sequence[tuple[str, Any]],
    skills: Skills | None = None,
    called: Sequence[Iterable[str]] = (),
    named: ChoiceWords | None = None,
) -> list[str]:
    """The sentences that answer ``question`` from ``results``, ``(skill_name, result)`` pairs
    (see the module's docstring): [] when none is about what it asks. ``called`` and
    ``named``: as :func:`bound_sentences` takes them."""
    asked = [
        (name, result, candidate_lines(result, question.text, question.language))
        for name, result in results
    ]
    return bound_sentences(asked, question, skills, called, named)


def _thing_words(
    lines: Sequence[Line], named: ChoiceWords, language: Language
) -> Callable[[Line], frozenset[str]]:
    """The words of the thing a line's text names: the text, what the skills call it
    (``named``), and the texts of each other object of the result that holds it (a compared
    reading's ``label``)."""
    texts = object_texts(lines)

    def words_of(line: Line) -> frozenset[str]:
        text = str(line.node).strip()
        held = [
            t for path, said in texts.items() if path != prefix(line) and text in said for t in said
        ]
        return known_words([text, *held, *named.get(text, ())], [], language)

    return words_of


def _ids_named(result: Any, named: ChoiceWords, language: Language) -> frozenset[str]:
    """The words ``named`` gives the texts of ``result`` it names things by."""
    texts = object_texts(result_line_parts(result, language)) if named else {}
    return frozenset(w for said in texts.values() for text in said for w in named.get(text, ()))


def both_parts(first: str, second: str, language: Language = ENGLISH) -> str:
    """One sentence stating both parts of a question in two parts."""
    return language.said_both.format(
        first=first.removesuffix("."), second=f"{second[:1].lower()}{second[1:]}"
    )


__all__ = [
    "MAX_SENTENCES",
    "Skills",
    "both_parts",
    "bound_sentences",
    "fitting_sentences",
    "sentences_for",
]
