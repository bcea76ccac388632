"""Help for a model too small to drive the loop by itself (docs/design.md, "Small models").

Each help is built only from what the registry says about a skill: its name, signature,
description, example questions and argument choices. None knows any skill or question word.

- **Which skill.** A small model names the first skill in its prompt whatever it is asked, but it
  judges well how likely a question is after a skill's own description. So the next skill is the
  candidate under whose description the question is most likely, log P(question | description)
  (the noisy-channel direction). A skill whose argument takes one of a few values known at run
  time (the sensors present) is a candidate once per value, with that value's description.
- **Answer or go on.** After a result the model itself chooses between its two action heads,
  ``{"final_answer": "`` and ``{"skill_name": "``, by their likelihood; ``answer_bias`` leans
  that choice toward answering. A call already made is not made again, and the last allowed
  step answers.
- **What to say.** The result turn repeats the question, and the answer is the model's own text,
  only forced to start as an answer. Code never writes an answer.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

from edge_agent.agent.events import (
    AgentState,
    CallSkillAction,
    SkillResultObservation,
)
from edge_agent.agent.prompt import ChatFormat, signature_text
from edge_agent.agent.protocol import ModelHandle, ScoringUnsupported
from edge_agent.agent.registry import SkillSpec

ANSWER_HEAD = '{"final_answer": "'
SKILL_HEAD = '{"skill_name": "'


def action_text(skill_name: str, arguments: dict[str, Any]) -> str:
    """An action as the canonical grammar spells it (``json.dumps``'s separators)."""
    return json.dumps({"skill_name": skill_name, "arguments": arguments}, ensure_ascii=False)


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A skill the next action may call: with its arguments fixed, or for the model to write."""

    skill_name: str
    arguments: dict[str, Any] | None
    """Fixed arguments (none needed, or every required one set from its choices); ``None``
    when the model writes them."""
    description: str
    """The text the question is scored after."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.skill_name, "*" if self.arguments is None else json.dumps(self.arguments))


def candidates_for(spec: SkillSpec, fmt: ChatFormat) -> list[Candidate]:
    """The candidates one skill offers: one, or one per value of its argument with choices."""
    required = set(spec.parameters_schema.get("required", ()))
    choices = spec.choice_values()
    listed = "".join(f"\n- {example}" for example in spec.examples)

    def describe(signature: str, extra: str = "") -> str:
        text = f"The skill {signature}: {spec.description}{extra}\nQuestions it answers:{listed}\n-"
        return f"{fmt.user_prefix}{fmt.defuse(text)}"

    if not required:
        return [Candidate(spec.name, {}, describe(signature_text(spec)))]
    chosen = [name for name in required if name in choices]
    if len(chosen) == 1 and len(required) == 1:
        (argument,) = chosen
        return [
            Candidate(
                spec.name,
                {argument: value},
                describe(
                    f"{spec.name}({argument}={json.dumps(value, ensure_ascii=False)})",
                    f"\n{value}: {meaning}" if meaning else "",
                ),
            )
            for value, meaning in choices[argument].items()
        ]
    return [Candidate(spec.name, None, describe(signature_text(spec)))]


@dataclasses.dataclass(eq=False)
class Guidance:
    """The helps a small model gets; ``Agent(..., guidance=Guidance())`` turns them on."""

    answer_bias: float = 2.0
    """Nats added to the answer head's log-probability when the model chooses, after a result,
    between answering and calling another skill."""
    restate_question: bool = True
    """End each result turn with the question, so the answer is written right after it."""
    _candidates: dict[tuple[int, tuple[str, ...], ChatFormat], list[Candidate]] = (
        dataclasses.field(default_factory=dict, init=False, repr=False)
    )

    def candidates(
        self, version: int, skills: Sequence[SkillSpec], fmt: ChatFormat
    ) -> list[Candidate]:
        """Every candidate of ``skills``, worked out once per registry version."""
        key = (version, tuple(s.name for s in skills), fmt)
        found = self._candidates.get(key)
        if found is None:
            if len(self._candidates) > 16:
                self._candidates.clear()
            found = [c for spec in skills for c in candidates_for(spec, fmt)]
            self._candidates[key] = found
        return found

    def reply(
        self,
        model: ModelHandle,
        state: AgentState,
        prompt: str,
        candidates: Sequence[Candidate],
        *,
        last_step: bool,
        generate: Callable[..., str],
    ) -> str:
        """The model's next reply to ``prompt``, guided; ``generate(prompt, prefix=...)`` asks
        the model itself. Raises what the model raises."""
        tried = {_key(a) for a in state.stream.root if isinstance(a, CallSkillAction)}
        left = [c for c in candidates if c.key not in tried and (c.skill_name, "*") not in tried]
        answered_once = any(isinstance(e, SkillResultObservation) for e in state.stream.root)
        try:
            if last_step or not left:
                return generate(prompt, prefix=ANSWER_HEAD)
            if answered_once and self._prefers_answer(model, prompt):
                return generate(prompt, prefix=ANSWER_HEAD)
            best = self._best(model, model.chat_format.defuse(state.query), left)
        except ScoringUnsupported:
            return generate(prompt)
        if best.arguments is not None:
            return action_text(best.skill_name, best.arguments)
        return generate(prompt, prefix=f'{SKILL_HEAD}{best.skill_name}", "arguments": {{')

    def _prefers_answer(self, model: ModelHandle, prompt: str) -> bool:
        answer, skill = model.score(prompt, [ANSWER_HEAD, SKILL_HEAD])
        return sum(answer) + self.answer_bias >= sum(skill)

    @staticmethod
    def _best(model: ModelHandle, query: str, candidates: Sequence[Candidate]) -> Candidate:
        scores = model.likelihood([c.description for c in candidates], f" {query}")
        return candidates[max(range(len(candidates)), key=scores.__getitem__)]


def _key(action: CallSkillAction) -> tuple[str, str]:
    return (action.skill_name, json.dumps(action.arguments))


__all__ = ["ANSWER_HEAD", "SKILL_HEAD", "Candidate", "Guidance", "action_text", "candidates_for"]
