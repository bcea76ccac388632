"""The seam through which help for a small model enters the loop, declared in full.

The loop always has a guide: a model that drives the loop by itself gets the plain one
(:class:`PlainGuide`, the default), which asks the model and changes nothing. A model too small
to drive it (the embedded default) is helped by an object with these members; the package's own
is :class:`edge_agentd.guidance.guidance.Guidance`, in a layer of its own above this one.
Whatever the help does, the loop keeps the contract and the grounding rules: each reply is
parsed and validated as any model's, and ``grounded`` says which answers the loop will take.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from edge_agentd.agent.events import AgentState, Event
    from edge_agentd.agent.language import Language
    from edge_agentd.agent.observed import Evidence
    from edge_agentd.agent.protocol import ModelHandle
    from edge_agentd.agent.registry import SkillSpec


@runtime_checkable
class Guide(Protocol):
    """Help for a small model: how its prompt reads, and its next reply, chosen with it."""

    @property
    def restate_question(self) -> bool:
        """Whether each result turn restates the question."""

    @property
    def result_lines(self) -> bool:
        """Whether a result turn shows the result as lines (``path = value``), not JSON."""

    @property
    def answer_examples(self) -> str | None:
        """The system prompt's closing part, in place of the plain prompt's example action and
        grounding rules; None keeps those (a model that drives the loop reads them)."""

    def focus(self, model: ModelHandle, query: str, event: Event) -> str | None:
        """The part of a skill result the question asks about, named in its turn; None for
        other events, or when nothing is named."""

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
        """The model's next reply to ``prompt``: a call among ``skills`` (of registry
        ``version``) or an answer. ``generate(prompt, **kwargs)`` asks the model itself
        (``calls_only``: True, or some skills' names, for a call alone, of one of them);
        ``grounded(answer)`` says whether the loop takes an answer, so only such answers are
        offered; ``evidence(language)`` is the run's evidence so far as the grounding rules
        read it (gathered once, not again by the guide). Raises what the model raises."""


@dataclasses.dataclass(frozen=True)
class PlainGuide:
    """No help: the model alone, reading the plain prompt (its example action and the grounding
    rules), each reply its own."""

    restate_question: bool = False
    result_lines: bool = False
    answer_examples: str | None = None

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
        return generate(prompt)


PLAIN = PlainGuide()
"""The guide of an Agent given none."""

__all__ = ["PLAIN", "Guide", "PlainGuide"]
