"""Grounding: the rules every final answer passes, for every model and strategy (docs/design.md,
"Grounding").

An answer is a claim about this device, so it must rest on what this run observed:

1. **No answer without evidence.** Until a skill has returned a result in this run, the only
   answer is one that begins ``I cannot tell``, or, for a question about the skills themselves
   ("What skills do you have?"), one that names them as the catalogue does.
2. **Every value is the evidence's.** Each number an answer writes is a number of the results or
   of the question, each text with digits in it (a date, a time, a sensor's name) is written there
   whole, and a ``%`` or ``°`` unit after a number is one the evidence writes after it, where it
   writes one.
3. **The subject is the evidence's.** The thing the question asks about (its subject, found by
   the language's grammar alone, :func:`~edge_agentd.agent.question.question_subject`) must be
   named by a call that returned a result (its skill's name, description, examples and
   arguments) or by the results (keys and texts): every word that says which one, and its
   head or another of its words. Otherwise the answer says it cannot tell. No model scores a
   word here: a word the evidence does not write is not the evidence's ("the garage door"
   beside a front-door skill).
4. **A state is a claim.** A yes-or-no question asks whether its subject is in a state ("open"
   of "Is the front door open?"): an answer that says it is must find that state in the results,
   and one that says it is not must not find it there (:func:`state_claim`).

:func:`check_answer` is the validator the loop runs on every answer (a failed rule is a
``ValidationErrorObservation`` with ``validator_name="grounding"``, and the seed's retry).
Where the model's decoding is ours, :func:`grounded_schema` puts the same rules in the action
schema: the first action is a call (unless the question is about the skills), before any result
the answer's pattern admits only "I cannot tell" (or the skills' names), and after, copy-only
values (:func:`~edge_agentd.agent.evidence.answer_pattern`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from edge_agentd.agent.claims import (
    absent_value,
    holds_state,
    misplaced_unit,
    names_a_skill,
    state_claim,
    unnamed_subject,
)
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.events import AgentState, CallSkillAction, ValidationErrorObservation
from edge_agentd.agent.evidence import (
    answer_pattern,
    asked_text_pattern,
    cannot_tell_pattern,
    copyable,
    plain_chars,
)
from edge_agentd.agent.language import Language
from edge_agentd.agent.listed import listed_things
from edge_agentd.agent.numbers import unstated_number
from edge_agentd.agent.observed import Evidence, Gathered, gather
from edge_agentd.agent.vocabulary import is_known, known_words
from edge_agentd.agent.yesno import asks_yes_or_no, compares_a_value, opens_yes_or_no

if TYPE_CHECKING:
    from edge_agentd.agent.registry import Registry

GROUNDING = "grounding"
"""The ``validator_name`` of an answer that broke a grounding rule."""
NO_EVIDENCE = "no_evidence"
VALUE_NOT_IN_EVIDENCE = "value_not_in_evidence"
UNKNOWN_SUBJECT = "unknown_subject"
STATE_NOT_IN_EVIDENCE = "state_not_in_evidence"
NUMBER_NOT_IN_EVIDENCE = "number_not_in_evidence"
NO_VALUE_COMPARED = "no_value_compared"
NOT_YES_OR_NO = "not_yes_or_no"

_DIGIT = re.compile(r"\d")

GROUNDING_RULES = ENGLISH.rules
"""The rules as the system prompt states them to a model that drives the loop itself: fixed
text, so the system prompt stays byte-identical for the same registry."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A broken rule: which, and what the model is told to do instead."""

    error_type: str
    feedback: str

    def observation(self) -> ValidationErrorObservation:
        return ValidationErrorObservation(
            validator_name=GROUNDING, error_type=self.error_type, feedback=self.feedback
        )


def declines(answer: str, language: Language = ENGLISH) -> bool:
    """Whether ``answer`` says it cannot tell."""
    return language.declines(answer)


def check_answer(answer: str, evidence: Evidence) -> Verdict | None:
    """The first grounding rule ``answer`` breaks, or None when it keeps them all."""
    language = evidence.question.language
    cannot, declined = language.cannot_tell, language.declines(answer)
    # An answer that cannot tell may say why in a failed skill's own words.
    texts = (*evidence.texts, *evidence.errors) if declined else evidence.texts
    absent = absent_value(answer, texts, language) or misplaced_unit(
        answer, evidence.readings, evidence.question.text
    )
    if absent is not None:
        return Verdict(
            VALUE_NOT_IN_EVIDENCE, language.value_absent.format(value=absent, cannot=cannot)
        )
    if declined:
        return None
    if not evidence.results:
        if evidence.question.about_catalogue and names_a_skill(answer, evidence.skills):
            return None
        return Verdict(NO_EVIDENCE, language.no_evidence.format(cannot=cannot))
    unnamed = evidence.unnamed_subject()
    if unnamed is not None:
        feedback = language.unknown_subject.format(subject=unnamed, cannot=cannot)
        return Verdict(UNKNOWN_SUBJECT, feedback)
    number = unstated_number(evidence.question, evidence.results, [evidence.arguments])
    if number is not None:
        feedback = language.number_absent.format(number=number, cannot=cannot)
        return Verdict(NUMBER_NOT_IN_EVIDENCE, feedback)
    state = evidence.question.state
    claim = None if state is None else state_claim(answer, state, language)
    held = state is not None and holds_state(evidence.results, state, language)
    if state is not None and evidence.question.exists and not held:
        # "Is a humidity sensor connected?": a listing that holds one says it is there.
        held = bool(listed_things(evidence.question, evidence.results))
    # A "No" to a state no call or result has a word for says more than the evidence: a door
    # "closed" says nothing of whether it is "locked".
    unspoken = (
        claim is False and not held and not is_known(state or "", evidence.vocabulary, language)
    )
    if claim is not None and state is not None and (claim != held or unspoken):
        said = state if claim else f"{language.not_} {state}"
        feedback = language.state_absent.format(said=said, cannot=cannot)
        return Verdict(STATE_NOT_IN_EVIDENCE, feedback)
    if compares_a_value(evidence.question) and not _DIGIT.search(answer):
        # "The disk is more than half full." of a disk 31.8 % used: a comparison's answer
        # says the value it compared, which the rules then hold to the results.
        return Verdict(NO_VALUE_COMPARED, language.no_value_compared.format(cannot=cannot))
    if asks_yes_or_no(evidence.question) and not opens_yes_or_no(answer, language):
        # "Is the washing machine done?" asks yes or no; "It is running and has 34 min left."
        # leaves the asker to work it out.
        feedback = language.not_yes_or_no.format(yes=language.yes, no=language.no, cannot=cannot)
        return Verdict(NOT_YES_OR_NO, feedback) if language.not_yes_or_no else None
    return None


def _asking(branch: dict[str, Any], asked: str) -> dict[str, Any]:
    """A call's ``branch`` with each free-text argument (a string with no list of values) held
    to ``asked``, the question's own words: a call asks what the question asks
    (:func:`~edge_agentd.agent.observed.asks_what_was_asked` holds the same after it)."""
    arguments = branch.get("properties", {}).get("arguments")
    if not isinstance(arguments, dict) or not isinstance(arguments.get("properties"), dict):
        return branch
    held = {
        name: {**value, "pattern": asked}
        if isinstance(value, dict)
        and value.get("type") == "string"
        and not {"enum", "const", "pattern"} & value.keys()
        else value
        for name, value in arguments["properties"].items()
    }
    properties = {**branch["properties"], "arguments": {**arguments, "properties": held}}
    return {**branch, "properties": properties}


@dataclasses.dataclass(frozen=True)
class Grounding:
    """The grounding rules as one run validator: its prompt text, its hold on the action schema
    where the decoding is ours, and its check of every final answer.

    The seed's :class:`~edge_agentd.agent.loop.Agent` has none: built as the seed signs it, a
    final answer ends the run at once. ``Agent(..., grounding=Grounding())`` turns the rules on;
    they then run first among the run's validators, and a broken one is a
    ``ValidationErrorObservation`` named :data:`GROUNDING`. Every agent the daemon builds has
    it (docs/design.md, "Grounding")."""

    language: Language = dataclasses.field(default=ENGLISH, kw_only=True)
    """The language questions are read and answers judged in."""
    rules: str = ""
    """What a model that drives the loop is told (the system prompt's closing part); empty,
    the language's rules."""

    def __post_init__(self) -> None:
        if not self.rules:
            object.__setattr__(self, "rules", self.language.rules)

    def evidence(
        self,
        state: AgentState,
        registry: Registry,
        skills: Iterable[str],
        gathered: Gathered | None = None,
    ) -> Evidence:
        """What ``state``'s run has observed so far, as the rules read it: read on from what
        the run ``gathered`` before (it keeps that, :class:`~edge_agentd.agent.run.RunCache`),
        else from the start."""
        return gather(state, registry, skills, gathered, self.language)

    def check(
        self,
        answer: str,
        state: AgentState,
        registry: Registry,
        skills: Iterable[str],
        gathered: Gathered | None = None,
    ) -> ValidationErrorObservation | None:
        """The rule ``answer`` breaks, as the observation the model sees next, or None."""
        verdict = check_answer(answer, gather(state, registry, skills, gathered, self.language))
        return None if verdict is None else verdict.observation()

    def accepts(
        self,
        answer: str,
        state: AgentState,
        registry: Registry,
        skills: Iterable[str],
        gathered: Gathered | None = None,
    ) -> bool:
        """Whether ``answer`` keeps every rule now."""
        evidence = gather(state, registry, skills, gathered, self.language)
        return check_answer(answer, evidence) is None

    def hold(
        self,
        schema: dict[str, Any],
        state: AgentState,
        registry: Registry,
        skills: Iterable[str],
        gathered: Gathered | None = None,
        *,
        last_step: bool = False,
    ) -> dict[str, Any]:
        """``schema`` with its answer held to the rules (:func:`grounded_schema`): while only
        "I cannot tell" may be said and a skill not yet called names what the question asks
        about, the answer waits for that call, unless this is the run's last step. A skill the
        model called twice the same way is not offered again (:func:`repeated_calls`)."""
        evidence = gather(state, registry, skills, gathered, self.language)
        waiting = not last_step and only_declines(evidence) and evidence.called
        return grounded_schema(
            schema,
            evidence,
            unmade_call=waiting and could_answer(evidence, registry),
            spent=repeated_calls(state),
        )


# -- the same rules, where the decoding is ours ---------------------------------------------------


def answer_rule(evidence: Evidence) -> str:
    """The pattern every answer the decoder may write for this evidence matches: before any
    result, "I cannot tell" (or, asked about the skills, an answer naming one); with results
    whose words do not name the question's subject, "I cannot tell"; else copy-only values."""
    question = evidence.question
    language = question.language
    if not evidence.results:
        if question.about_catalogue and evidence.skills:
            # Words and the skills' names, each name whole (no letter glued to it), one at least.
            plain = f"[{plain_chars(language)}]"
            names = "(" + "|".join(re.escape(n) for n in evidence.skills) + ")"
            word = f"({names}|[{language.answer_letters}']+)"
            gap = "[" + language.between.replace("'", "") + "]+"
            listing = f"({word}{gap})*{names}({gap}{word})*{gap[:-1]}*"
            return f"^({language.cannot_tell}{plain}*|{listing})([.!?])?$"
        return cannot_tell_pattern(language)
    if evidence.unnamed_subject() is not None:
        return cannot_tell_pattern(language)
    # Values copied, none required: which one to state is the strategy's (guidance requires one).
    found = copyable(evidence.results, question.text, language=language)
    return answer_pattern(dataclasses.replace(found, stated=()), language)


def only_declines(evidence: Evidence) -> bool:
    """Whether the only answer the rules admit now is one that says it cannot tell."""
    if not evidence.results:
        return not evidence.question.about_catalogue
    return evidence.unnamed_subject() is not None


def could_answer(evidence: Evidence, registry: Registry) -> bool:
    """Whether a skill the run has not called names the question's subject in its own words
    (name, description, examples): a call it has not made could answer."""
    question = evidence.question
    if question.subject is None and not question.parts:
        return False
    for name in evidence.skills:
        spec = registry.get(name)
        if name in evidence.called_names or spec is None:
            continue
        words = known_words([name, spec.description, *spec.examples], [], question.language)
        if unnamed_subject(question, words) is None:
            return True
    return False


def repeated_calls(state: AgentState) -> frozenset[str]:
    """The skills the run called at least twice with the same arguments.

    A call made again the same way brings the same result or the same error, and a model that
    decodes greedily, shown that error, makes it a third time and a fourth, until the run's
    steps are gone and it cannot tell. Where the decoding is ours such a skill is left out of
    the calls the model may make next, so it turns to another skill or answers; a skill called
    once stays open, for a call with other arguments after an error.
    """
    seen: set[tuple[str, str]] = set()
    repeated: set[str] = set()
    for event in state.stream:
        if isinstance(event, CallSkillAction):
            call = (event.skill_name, json.dumps(event.arguments, sort_keys=True, default=str))
            if call in seen:
                repeated.add(event.skill_name)
            seen.add(call)
    return frozenset(repeated)


def grounded_schema(
    schema: dict[str, Any],
    evidence: Evidence,
    *,
    unmade_call: bool = False,
    spent: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """``schema`` (an action schema, or an answer's alone) with its answer held to the rules:
    a pattern or a list of answers the strategy already set is kept unless only "I cannot
    tell" may be said now. The calls of the skills in ``spent`` are left out."""
    pattern = answer_rule(evidence)
    declining = only_declines(evidence)

    def held(branch: dict[str, Any]) -> dict[str, Any]:
        answer = branch.get("properties", {}).get("final_answer")
        if not isinstance(answer, dict) or (
            ("pattern" in answer or "enum" in answer) and not declining
        ):
            return branch
        properties = {**branch["properties"], "final_answer": {**answer, "pattern": pattern}}
        return {**branch, "properties": properties}

    if "oneOf" in schema:
        open_branches = [
            branch
            for branch in schema["oneOf"]
            if branch.get("properties", {}).get("skill_name", {}).get("const") not in spent
        ]
        # A schema of calls alone keeps them all rather than allow nothing.
        asked = asked_text_pattern(evidence.question.text, evidence.question.language)
        branches = [_asking(held(branch), asked) for branch in open_branches or schema["oneOf"]]
        calls = [b for b in branches if "final_answer" not in b.get("properties", {})]
        if calls and unmade_call:
            # "I cannot tell" is no answer while a call not made could answer: a model that
            # drives the loop would otherwise give up after one wrong skill with steps left.
            return {**schema, "oneOf": calls}
        if calls and not evidence.called and not evidence.question.about_catalogue:
            # The first action is a call: a model that drives the loop otherwise answers at once,
            # and held to the grounding rules that answer can only be "I cannot tell".
            # After a call, even a failed one, "I cannot tell" is open.
            return {**schema, "oneOf": calls}
        return {**schema, "oneOf": branches}
    return held(schema)


__all__ = [
    "GROUNDING",
    "GROUNDING_RULES",
    "NOT_YES_OR_NO",
    "NO_EVIDENCE",
    "NO_VALUE_COMPARED",
    "NUMBER_NOT_IN_EVIDENCE",
    "STATE_NOT_IN_EVIDENCE",
    "UNKNOWN_SUBJECT",
    "VALUE_NOT_IN_EVIDENCE",
    "Grounding",
    "Verdict",
    "answer_rule",
    "check_answer",
    "could_answer",
    "declines",
    "grounded_schema",
    "only_declines",
    "repeated_calls",
]
