"""What holds a run's final answers: the grounding rules first, when the agent has them
(:class:`~edge_agentd.agent.grounding.Grounding`, the one object grounding enters by), then the
workflow's validators (docs/design.md, "The loop's contract" and "Grounding").

The loop asks this one object everything an answer meets, so it never asks whether there are
rules: an agent built as the seed signs it has none, and every answer then passes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from edge_agentd.agent.events import AgentState, FinalAnswerAction, ValidationErrorObservation
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.agent.registry import Registry
from edge_agentd.agent.run import RunCache
from edge_agentd.agent.workflow import Result

log = logging.getLogger(__name__)


class Validators:
    """A run's checks of its final answers, and their hold on the action schema."""

    def __init__(self, grounding: Grounding | None, registry: Registry, model: ModelHandle) -> None:
        self.grounding = grounding
        self.registry = registry
        self.model = model

    @property
    def rules(self) -> str | None:
        """The rules a model that drives the loop is told, or None."""
        return None if self.grounding is None else self.grounding.rules

    def hold(
        self,
        schema: dict[str, Any],
        state: AgentState,
        skills: Iterable[str],
        cache: RunCache,
        *,
        last_step: bool,
    ) -> dict[str, Any]:
        """``schema`` with its answer held to the grounding rules, where the decoding is ours (a
        model that decodes under none is held by :meth:`refusal` alone)."""
        if self.grounding is None or not self.model.uses_action_schema:
            return schema
        return self.grounding.hold(
            schema, state, self.registry, skills, cache.evidence, last_step=last_step
        )

    def accepts(
        self, answer: str, state: AgentState, skills: Iterable[str], cache: RunCache
    ) -> bool:
        """Whether the grounding rules take ``answer`` now."""
        grounding = self.grounding
        return grounding is None or grounding.accepts(
            answer, state, self.registry, skills, cache.evidence
        )

    def refusal(
        self, action: FinalAnswerAction, state: AgentState, skills: Iterable[str], cache: RunCache
    ) -> ValidationErrorObservation | None:
        """The check ``action`` fails, as the feedback the model sees next, or None: the
        grounding rules first, then the workflow's validators."""
        if self.grounding is not None:
            failed = self.grounding.check(
                action.answer, state, self.registry, skills, cache.evidence
            )
            if failed is not None:
                return failed
        workflow = cache.workflow
        for validator in workflow.validators if workflow else ():
            name = getattr(validator, "__name__", type(validator).__name__)
            try:
                verdict = validator(action, state)
            except Exception as exc:
                log.exception("final-answer validator %s raised", name)
                verdict = Result(False, f"The answer could not be checked ({type(exc).__name__}).")
            if not isinstance(verdict, Result):
                raise TypeError(
                    f"validator {name} must return a Result, not {type(verdict).__name__}"
                )
            if not verdict.ok:
                return ValidationErrorObservation(
                    validator_name=name, error_type=None, feedback=verdict.feedback
                )
        return None


__all__ = ["Validators"]
