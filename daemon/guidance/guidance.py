"""Help for a model too small to drive the loop by itself (docs/design.md, "Small models").

Each help is built only from what the registry says about a skill: its name, signature,
description, example questions and the calls it lists as ready. None knows any skill or
question word.

- **Which skill.** A small model names the first skill in its prompt whatever it is asked, but it
  judges well how likely a question is after a skill's own description. So the next skill is the
  candidate under whose description the question is most likely, log P(question | description)
  (the noisy-channel direction). A skill that lists the calls worth making now (one per sensor
  present and what it measures) offers each as a candidate, with what that call gets.
- **Answer or go on.** After a failed call the next best candidate is tried; a call already made
  is never made again, and the last allowed step answers. After a result the model answers, or,
  with ``go_on``, chooses itself between its two action heads, ``{"final_answer": "`` and
  ``{"skill_name": "``, by their likelihood (``answer_bias`` leans it toward answering).
- **A second skill.** A question in two parts joined by "and" asks its first part first, and
  its second part after the first result; the answer states a value of each. Otherwise, after
  the first result, a question likelier after the first call's description joined with
  another's than with no skill's gets that second call (:mod:`edge_agentd.guidance.followup`).
- **The call it names.** Calls taking the question's head noun as an argument go first; one
  narrower than its skill's call with no arguments only when the question names what narrows it.
- **Which words.** A skill that takes one free text argument gets a phrase of the question, the
  one the model finds most likely there (a small model otherwise copies its prompt's examples).
- **Where to look.** A result with several parts (a status with load, memory and disk; a list
  of readings) is read wrong by a small model, which copies the first number it sees. Each part
  is scored the same noisy-channel way, log P(question | part), and the result turn names the
  likeliest part after restating the question. The whole result stays in the turn.
- **What it says.** Results are shown as short ``name: value unit`` lines, and the answer is
  one of the sentences the engine renders from them (:mod:`edge_agentd.guidance.render`): the
  value of a line the question asks about (:mod:`edge_agentd.guidance.asked`) under its own label,
  a state with what names it, a list's names or count, only those whose own label names what
  the question asks about (:func:`~edge_agentd.guidance.render.bound_sentences`). The model
  chooses among them by its likelihood of each as its reply; no word of it decides what the
  answer claims. The answer's event says so (``made_by="engine"``).
- **When it cannot tell.** Before the first call, the question is also scored after a
  description of no skill at all; when no candidate beats that content-free baseline by
  ``cannot_tell_margin``, no skill fits, and the answer is at once "I cannot tell ...".
  After the results, a question whose subject (the noun phrase it asks about) the calls made
  and their results do not know is answered "I cannot tell: no skill here reads ..."; one whose
  subject they know states a value (:mod:`edge_agentd.guidance.subject`); one not judged is
  offered both.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.events import (
    AgentState,
    CallSkillAction,
    Event,
    SkillResultObservation,
)
from edge_agentd.agent.language import Language
from edge_agentd.agent.observed import Evidence
from edge_agentd.agent.prompt import ChatFormat
from edge_agentd.agent.protocol import ModelHandle, ScoringUnsupported
from edge_agentd.agent.question import in_language
from edge_agentd.agent.registry import SkillSpec
from edge_agentd.guidance.candidates import Candidate, candidates_for
from edge_agentd.guidance.focus import focused_part
from edge_agentd.guidance.followup import (
    content_free,
    follow_up,
    named_calls,
    unasked_narrowings,
)
from edge_agentd.guidance.phrases import (
    likeliest_phrase,
    phrases_to_try,
    spent,
)
from edge_agentd.guidance.render import (
    Skills,
)
from edge_agentd.guidance.stating import ANSWER_HEAD, answer_sentences, chosen_answer

log = logging.getLogger(__name__)

SKILL_HEAD = '{"skill_name": "'


def action_text(skill_name: str, arguments: dict[str, Any]) -> str:
    """An action as the canonical grammar spells it (``json.dumps``'s separators)."""
    return json.dumps({"skill_name": skill_name, "arguments": arguments}, ensure_ascii=False)


@dataclasses.dataclass(eq=False)
class Guidance:
    """The helps a small model gets; ``Agent(..., guidance=Guidance())`` turns them on."""

    language: Language = dataclasses.field(default=ENGLISH, kw_only=True)
    """The language questions are read, prompts scored and answers said in."""

    go_on: bool = False
    """After a result, let the model choose to call another skill instead of answering (a small
    model nearly always prefers to, so it is off unless a model judges that well)."""
    answer_bias: float = 2.0
    """With ``go_on``: nats added to the answer head's log-probability when the model chooses,
    after a result, between answering and calling another skill."""
    restate_question: bool = True
    """End each result turn with the question, so the answer is written right after it."""
    answer_examples: str = ""
    """The system prompt's closing part: how answers read; empty, the language's worked
    answers about skills no registry has (so they favour none), with results as lines."""
    result_lines: bool = True
    """Show results as ``name: value unit`` lines (the event keeps the whole result)."""
    state_asked: bool = True
    """The sentences offered state the lines of each result the question is likeliest after, by
    their names (:mod:`edge_agentd.guidance.asked`), not every line of the results."""
    cannot_tell_margin: float | None = 1.0
    """Nats by which the best candidate must beat the content-free baseline before the first
    call; below it no skill fits and the answer is at once "I cannot tell". None: always call
    a skill."""
    know_subject: bool = True
    """The answer to a question about something neither the calls made nor their results know
    ("the garage door sensor") is "I cannot tell ..."; one whose subject they know states a
    value (:mod:`~edge_agentd.guidance.subject`)."""
    focus_parts: bool = True
    """After a result with several parts, name the part the question asks about."""
    follow_up_margin: float | None = None
    """Nats by which a question must be likelier after the first call's description joined with
    another candidate's than joined with no skill's, before that second call is made after the
    first result (a question in two parts); None, the default: answer after the first result. A
    margin can tell comparisons from one-part questions, but the embedded model answered none
    better with the second result, in more time (docs/performance.md, "What the code's choices
    rest on")."""
    part_margin: float | None = 0.5
    """Nats by which the second part of a question joined by "and" must fit its best candidate
    above the first call, for that candidate to be the second call (:func:`~edge_agentd.agent.
    followup.part_call`); the answer then states each result's value. None: no split."""
    _candidates: dict[tuple[int, tuple[str, ...], ChatFormat], list[Candidate]] = dataclasses.field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        if not self.answer_examples:
            self.answer_examples = self.language.answer_examples

    def candidates(
        self, version: int, skills: Sequence[SkillSpec], fmt: ChatFormat
    ) -> list[Candidate]:
        """Every candidate of ``skills``, worked out once per registry version."""
        key = (version, tuple(s.name for s in skills), fmt)
        found = self._candidates.get(key)
        if found is None:
            if len(self._candidates) > 16:
                self._candidates.clear()
            found = [c for spec in skills for c in candidates_for(spec, fmt, self.language)]
            self._candidates[key] = found
        return found

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
        grounded: Callable[[str], bool] | None = None,
        evidence: Callable[[Language], Evidence] | None = None,
    ) -> str:
        """The model's next reply to ``prompt``, guided, among the candidates of ``skills``
        (of registry ``version``); ``generate(prompt, prefix=...)`` asks the model itself, and
        ``grounded(answer)`` says whether the loop takes an answer (the grounding rules: only
        such sentences are offered; ``evidence`` is not read). Raises what the model raises."""
        candidates = self.candidates(version, skills, model.chat_format)
        events = state.stream.root
        made = [a for a in events if isinstance(a, CallSkillAction)]
        # A call not to make: one made, or one narrower than another the question did not ask
        # for. One whose arguments vary is tried once per run; one filled with a phrase of the
        # question, up to PHRASE_TRIES phrases and the whole question while refused (the whole
        # first, for a skill that reads sentences).
        skip = {(a.skill_name, json.dumps(a.arguments)) for a in made}
        skip |= unasked_narrowings(state.query, candidates, self.language)
        left = [
            c
            for c in candidates
            if c.key not in skip
            and not (c.arguments is None and spent(c.skill_name, c.text_argument, events))
        ]
        result_last = bool(events) and isinstance(events[-1], SkillResultObservation)
        try:
            # A call that failed after a result is not followed by a third: the result stands.
            failed_after = not result_last and any(
                isinstance(e, SkillResultObservation) for e in events
            )
            named = {spec.name: spec for spec in skills}
            if last_step or not left or failed_after:
                return self._answer(model, prompt, state, candidates, grounded, skills=named)
            question = in_language(state.question, self.language)
            second = follow_up(
                model,
                state,
                candidates,
                left,
                self.follow_up_margin,
                part_margin=self.part_margin,
                question=question,
            )
            if (
                result_last
                and second is None
                and (not self.go_on or self._prefers_answer(model, prompt))
            ):
                return self._answer(model, prompt, state, candidates, grounded, skills=named)
            baseline = self.cannot_tell_margin is not None and not made
            # A question in two parts is first asked its first part; the second comes after.
            parts = [p.text for p in question.parts] if self.part_margin is not None else []
            asking = parts[0] if parts and not made else state.query
            query = model.chat_format.defuse(asking)
            # A call whose own argument is the thing asked for ("What is the humidity?" and
            # quantity="humidity") is chosen among those alone: a near tie otherwise read the
            # temperature and answered "The humidity is 22.7 °C."
            pool = named_calls(asking, left, self.language) or left
            best, fits = (second, 0.0) if second else self._best(model, query, pool, baseline)
            if baseline and self.cannot_tell_margin is not None and fits < self.cannot_tell_margin:
                return self._answer(model, prompt, state, candidates, grounded, skills=named)
        except ScoringUnsupported:
            return generate(prompt)
        if best.arguments is not None:
            return action_text(best.skill_name, best.arguments)
        phrases = []
        if best.text_argument:
            refused = [
                str(a.arguments.get(best.text_argument, ""))
                for a in made
                if a.skill_name == best.skill_name
            ]
            phrases = phrases_to_try(
                state.query, refused, best.whole_first, best.text_argument, self.language
            )
        if best.text_argument and len(phrases) == 1:
            return action_text(best.skill_name, {best.text_argument: phrases[0]})
        if best.text_argument and phrases:
            options = [action_text(best.skill_name, {best.text_argument: p}) for p in phrases]
            scores = [sum(s) for s in model.score(prompt, options)]
            return action_text(
                best.skill_name, {best.text_argument: likeliest_phrase(phrases, scores)}
            )
        return generate(prompt, prefix=f'{SKILL_HEAD}{best.skill_name}", "arguments": {{')

    def focus(self, model: ModelHandle, query: str, event: Event) -> str | None:
        """The part of a skill result the question asks about, as ``path = value``
        (:func:`~edge_agentd.guidance.focus.focused_part`); None for other events or when off."""
        if not self.focus_parts or not isinstance(event, SkillResultObservation):
            return None
        return focused_part(model, query, event.skill_name, event.result, self.language)

    def answers(
        self,
        state: AgentState,
        model: ModelHandle | None = None,
        candidates: Sequence[Candidate] = (),
        skills: Skills | None = None,
    ) -> tuple[list[str], list[str]]:
        """The sentences the answer to ``state``'s question may be
        (:func:`~edge_agentd.guidance.stating.answer_sentences`), as this guidance's helps
        bind them."""
        return answer_sentences(
            state,
            self.language,
            model=model,
            candidates=candidates,
            skills=skills,
            know_subject=self.know_subject,
            state_asked=self.state_asked,
            part_margin=self.part_margin,
        )

    def _answer(
        self,
        model: ModelHandle,
        prompt: str,
        state: AgentState,
        candidates: Sequence[Candidate],
        grounded: Callable[[str], bool] | None,
        *,
        skills: Skills | None = None,
    ) -> str:
        """The answer: of :meth:`answers`, the one the model chooses
        (:func:`~edge_agentd.guidance.stating.chosen_answer`); the engine writes every word."""
        options, second = self.answers(state, model, candidates, skills)
        sentences = (options, second)
        return chosen_answer(
            model, prompt, state, sentences, grounded=grounded, language=self.language
        )

    def _prefers_answer(self, model: ModelHandle, prompt: str) -> bool:
        answer, skill = model.score(prompt, [ANSWER_HEAD, SKILL_HEAD])
        return sum(answer) + self.answer_bias >= sum(skill)

    def _best(
        self, model: ModelHandle, query: str, candidates: Sequence[Candidate], baseline: bool
    ) -> tuple[Candidate, float]:
        """The candidate the question fits best, and by how many nats it beats the question's
        likelihood after a description of no skill at all (0.0 without ``baseline``)."""
        prompts = [c.description for c in candidates]
        if baseline:
            prompts.append(content_free(model.chat_format, self.language))
        scores = model.likelihood(prompts, f" {query}")
        best = max(range(len(candidates)), key=scores.__getitem__)
        return candidates[best], scores[best] - scores[-1] if baseline else 0.0


__all__ = [
    "ANSWER_HEAD",
    "SKILL_HEAD",
    "Candidate",
    "Guidance",
    "action_text",
    "candidates_for",
    "content_free",
    "named_calls",
]
