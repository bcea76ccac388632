"""Answers the engine states for a model that drives the loop by itself (docs/design.md, "One
model turn").

A model that drives the loop (``strategy = "plain"``, a model file too large to guide) chooses
its calls in its own words. Once it has results, its answer is a choice among the sentences the
engine renders from them that are about what the question asks
(:func:`~edge_agentd.guidance.render.fitting_sentences`), and that the loop would take:

- exactly one fits: the engine says it, with no second model turn (``made_by="engine"``);
- several fit: the model decodes under a grammar whose only branch is an answer among them, so
  it writes only the tokens that tell them apart, and the answer is the engine's sentence;
- none fits: the model goes on as it would alone (another call, or "I cannot tell", as the
  grounding rules hold it).

Its prompt is the plain one (the example action and the grounding rules), so a model that drives
the loop reads what it would read unhelped. ``Answering(own_words=True)`` leaves every answer to
the model (the copy-only answers grounding holds it to): ``[model] answers = "model"``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

from edge_agentd.agent.claims import unnamed_subject
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.events import AgentState, CallSkillAction, Event, SkillResultObservation
from edge_agentd.agent.language import Language
from edge_agentd.agent.observed import Evidence
from edge_agentd.agent.protocol import Completion, ModelHandle
from edge_agentd.agent.question import Question, asks_about_many, in_language
from edge_agentd.agent.skillspec import SkillSpec
from edge_agentd.agent.vocabulary import known_words
from edge_agentd.agent.yesno import compares_a_value
from edge_agentd.guidance.choicewords import choice_words
from edge_agentd.guidance.compared import asked_about
from edge_agentd.guidance.declines import cannot_tell_sentence
from edge_agentd.guidance.render import fitting_sentences

ANSWER_OBJECT = '{{"final_answer": {}}}'


def answer_text(sentence: str) -> str:
    """``sentence`` as the answer action the canonical grammar spells."""
    return ANSWER_OBJECT.format(json.dumps(sentence, ensure_ascii=False))


@dataclasses.dataclass(eq=False)
class Answering:
    """The engine's answers for a model that drives the loop; ``Agent(..., guidance=Answering())``
    turns them on (the daemon's ``plain`` strategy)."""

    language: Language = dataclasses.field(default=ENGLISH, kw_only=True)
    """The language questions are read and answers said in."""
    own_words: bool = False
    """Leave every answer to the model: no sentence is offered, and the model writes its own."""
    restate_question: bool = False
    result_lines: bool = False
    answer_examples: str | None = None
    """None: the plain prompt's closing part (an example action, and the grounding rules)."""

    def focus(self, model: ModelHandle, query: str, event: Event) -> str | None:
        return None

    def reply(
        self,
        model: ModelHandle,
        state: AgentState,
        prompt: str,
        skills: Sequence[SkillSpec],
        *,
        version: int,
        last_step: bool,
        generate: Callable[..., str],
        grounded: Callable[[str], bool],
        evidence: Callable[[Language], Evidence],
    ) -> str:
        """The model's next reply: the one sentence that fits, said by the engine; a choice
        among several, decoded by the model; or, with none, whatever the model writes."""
        results = [
            (event.skill_name, event.result)
            for event in state.stream.root
            if isinstance(event, SkillResultObservation)
        ]
        # A question about many things at once ("How warm is it everywhere?") is not answered
        # by a sentence about one: the model reads on and says it.
        if self.own_words or asks_about_many(state.query, self.language):
            return generate(prompt)
        question = in_language(state.question, self.language)
        if not results:
            failed = any(isinstance(e, CallSkillAction) for e in state.stream.root)
            if not failed or last_step:
                return generate(prompt)
            # Every call failed: the next is one that could answer, not the failed one again.
            held = _call_that_could_answer(question, state, skills, generate, prompt)
            return generate(prompt) if held is None else held
        named = {spec.name: spec for spec in skills}
        called = _call_words(state, named)
        # A result of a call whose free text asked for something else ("next friday" of
        # "What is the date of next Wednesday?") answers another question: none of its
        # sentences is offered. The grounding rules judged each call once, as its result came.
        asked = evidence(self.language).asked
        results = [result for result, kept in zip(results, asked, strict=True) if kept]
        called = [words for words, kept in zip(called, asked, strict=True) if kept]
        # What the skills call each thing their results name by its id ("the 1-Wire probe").
        ids = choice_words((c for spec in skills for c in spec.ready_calls()), self.language)
        fitting = fitting_sentences(question, results, named, called, ids)
        fitting = [s for s in fitting if grounded(s)]
        if not fitting:
            held = (
                None
                if last_step
                else _call_that_could_answer(question, state, skills, generate, prompt)
            )
            if held is not None:
                return held
            if compares_a_value(question):
                # No sentence compares the value the question compares: whatever the model
                # writes of it, no rule reads which way it goes.
                cannot = cannot_tell_sentence(asked_about(question), results=True)
                return Completion(_spelled(model, cannot), made_by="engine")
            return generate(prompt)
        if len(fitting) == 1:
            return Completion(_spelled(model, fitting[0]), made_by="engine")
        answer = {
            "type": "object",
            "properties": {"final_answer": {"enum": fitting}},
            "required": ["final_answer"],
            "additionalProperties": False,
        }
        # The answer alone: a question the results answer is not asked of another skill.
        reply = generate(prompt, action_schema={"oneOf": [answer]})
        usage = reply.usage if isinstance(reply, Completion) else None
        # A model that decodes under no grammar may still write something else: then it is its.
        calls = model.chat_format.calls
        chosen = (
            _answer_of(str(reply)) if calls is None else calls.answer_of(str(reply))
        ) in fitting
        return Completion(str(reply), usage, made_by="engine" if chosen else "model")


def _call_that_could_answer(
    question: Question,
    state: AgentState,
    skills: Sequence[SkillSpec],
    generate: Callable[..., str],
    prompt: str,
) -> str | None:
    """The model's next reply where no result says what was asked: a call of a skill not yet
    called that names it, or one a called skill lists and the run has not made (and no other,
    nor one made already), as "I cannot tell" waits for it under grounding; None with none."""
    unmade = _unmade_calls_that_could_answer(question, state, skills)
    if not unmade:
        return None
    held = {name: calls for name, calls in unmade.items() if calls}
    return generate(prompt, calls_only=tuple(unmade), calls_with=held)


def _unmade_calls_that_could_answer(
    question: Question, state: AgentState, skills: Sequence[SkillSpec]
) -> dict[str, list[dict[str, Any]]]:
    """The skills the run has not called that name the question's subject in their own words
    or in the values their arguments may take now (each with no calls listed: any of its
    calls), and those it has called with the ready calls they list that it has not made whose
    own words name it."""
    if question.subject is None and not question.parts:
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    made = [e for e in state.stream.root if isinstance(e, CallSkillAction)]
    called = {e.skill_name for e in made}
    for spec in skills:
        if spec.name in called:
            # Called already, another of the calls it lists as ready may be of the thing asked:
            # "the 1-Wire probe" after a read of the CPU's sensor. Only that call's own words
            # count; the skill's, which every call of it has, named it the first time too.
            done = [e.arguments for e in made if e.skill_name == spec.name]
            ready = []
            for arguments, what in spec.ready_calls():
                if arguments in done:
                    continue
                words = known_words([*map(str, arguments.values()), what], [], question.language)
                if unnamed_subject(question, words) is None:
                    ready.append(dict(arguments))
            if ready:
                found[spec.name] = ready
            continue
        listed = [str(v) for _, values in spec.current_choices() for v in values if v]
        texts = [spec.name, spec.description, *spec.examples, *listed]
        words = known_words(texts, [], question.language)
        if unnamed_subject(question, words) is None:
            found[spec.name] = []
    return found


def _call_words(state: AgentState, skills: dict[str, SkillSpec]) -> list[list[str]]:
    """For each result of ``state``'s run, the words of the call that gave it: its arguments'
    values and what the skill's ready calls of those arguments get (:meth:`SkillSpec.gets
    <edge_agentd.agent.skillspec.SkillSpec.gets>`): the skill's own words for the thing that
    result is of."""
    found: list[list[str]] = []
    call: CallSkillAction | None = None
    for event in state.stream.root:
        if isinstance(event, CallSkillAction):
            call = event
        elif isinstance(event, SkillResultObservation):
            arguments = dict(call.arguments) if call is not None else {}
            spec = skills.get(event.skill_name)
            gets = spec.gets(arguments) if spec is not None and call is not None else []
            found.append([*(str(v) for v in arguments.values()), *gets])
            call = None
    return found


def _spelled(model: ModelHandle, sentence: str) -> str:
    """``sentence`` as the answer the model's action format spells."""
    calls = model.chat_format.calls
    return answer_text(sentence) if calls is None else calls.answer_text(sentence)


def _answer_of(reply: str) -> str | None:
    """The ``final_answer`` of a reply that is one answer action, else None."""
    try:
        action = json.loads(reply)
    except ValueError:
        return None
    answer = action.get("final_answer") if isinstance(action, dict) else None
    return answer if isinstance(answer, str) else None


__all__ = ["Answering", "answer_text"]
