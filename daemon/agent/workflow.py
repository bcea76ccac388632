"""Identity and recipes: the Soul the agent speaks as, and named Workflows with their checks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edge_agentd.agent.events import AgentState, FinalAnswerAction


@dataclasses.dataclass(frozen=True, slots=True)
class Result:
    """What a validator returns: ``ok``, and when not ok, feedback the model will read."""

    ok: bool
    feedback: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Soul:
    """The agent's identity, rendered at the top of the system prompt."""

    name: str = "edge-agent"
    persona: str = (
        "You are a helpful assistant running on a small Linux device at home. "
        "You answer questions about the device and its sensors by calling skills."
    )

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not isinstance(self.persona, str):
            raise TypeError("Soul(name, persona) takes two strings")

    def render(self) -> str:
        return f"Your name is {self.name}. {self.persona}".strip()


FinalAnswerValidator = Callable[["FinalAnswerAction", "AgentState"], Result]


@dataclasses.dataclass(frozen=True)
class Workflow:
    """A named recipe: instructions, an optional subset of skills, and final-answer checks."""

    name: str
    instructions: str = ""
    skills: Sequence[str] | None = None
    validators: Sequence[FinalAnswerValidator] = ()
    max_iterations: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("Workflow.name must be a non-empty string")
        if not isinstance(self.instructions, str):
            raise TypeError("Workflow.instructions must be a string")
        if self.skills is not None:
            if isinstance(self.skills, str) or not all(isinstance(s, str) for s in self.skills):
                raise TypeError("Workflow.skills must be a list of skill names")
            object.__setattr__(self, "skills", tuple(self.skills))
        if not all(callable(v) for v in self.validators):
            raise TypeError("Workflow.validators must be callables (action, state) -> Result")
        object.__setattr__(self, "validators", tuple(self.validators))
        if self.max_iterations is not None and (
            isinstance(self.max_iterations, bool)
            or not isinstance(self.max_iterations, int)
            or self.max_iterations < 1
        ):
            raise TypeError("Workflow.max_iterations must be a positive int or None")

    @property
    def allowed_skills(self) -> frozenset[str] | None:
        return None if self.skills is None else frozenset(self.skills)
