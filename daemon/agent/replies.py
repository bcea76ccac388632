"""The model's replies in one step, and the action the step's reply is (or why it is none).

A guide may ask the model more than once in a step (to score, to choose, under a schema of its
own); every call goes through :meth:`Replies.generate`, so each is held to the grounding rules
and the step knows which replies the model wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edge_agentd.agent.events import MadeBy, ModelErrorObservation, Usage
from edge_agentd.agent.parsing import parse_action
from edge_agentd.agent.protocol import (
    Completion,
    ContextExceeded,
    ModelError,
    ModelHandle,
    TokenCounts,
    step_usage,
)
from edge_agentd.agent.run import Step


class Replies:
    """What the model wrote in one step, each reply asked under the step's schema unless a guide
    asks under another (``held`` to the grounding rules all the same)."""

    def __init__(
        self,
        handle: ModelHandle,
        schema: dict[str, Any],
        held: Callable[[dict[str, Any]], dict[str, Any]],
        options: dict[str, Any],
    ) -> None:
        self.handle = handle
        self.schema = schema
        self.held = held
        self.options = options
        self.written: list[str] = []

    def generate(self, text: str, **more: Any) -> str:
        """The model's reply to ``text``: what a guide calls to ask it."""
        if isinstance(more.get("action_schema"), dict):
            more["action_schema"] = self.held(more["action_schema"])
        reply = self.handle.generate(text, **{"action_schema": self.schema, **self.options, **more})
        self.written.append(reply)
        return reply

    def maker(self, raw: str) -> MadeBy:
        """Who made ``raw``: the engine where it chose for the model (a candidate the model's
        likelihood picked; an answer it rendered from the results, which its Completion says),
        else the model, which wrote it (a reply it returned, or the start of one closed where
        the engine cut it: an answer cut at the token cap keeps the model's words)."""
        if isinstance(raw, Completion) and raw.made_by == "engine":
            return "engine"
        text = str(raw)
        wrote = any(
            raw is reply or str(reply) == text or str(reply).startswith(text.removesuffix('"}'))
            for reply in self.written
        )
        return "model" if wrote else "engine"

    def action(
        self,
        raw: object,
        elapsed: float,
        names: dict[str, None],
        counts: TokenCounts | None,
        call_id: str,
    ) -> Step:
        """The action of the step's reply ``raw``, which took ``elapsed`` seconds (or why it is
        none), with what it cost (``counts``, the step's calls') and who made it."""
        if not isinstance(raw, str):
            return ModelErrorObservation(
                code="bad_reply",
                error=f"the model returned {type(raw).__name__}, not str",
                usage=Usage(model_s=elapsed),
            )
        reported = raw.usage if isinstance(raw, Completion) else None
        usage = (
            Usage(model_s=elapsed)
            if reported is None
            else reported.model_copy(update={"model_s": elapsed})
        )
        usage = step_usage(usage, counts)
        return parse_action(str(raw), names, usage, made_by=self.maker(raw), call_id=call_id)


def model_error(
    exc: Exception, elapsed: float, counts: TokenCounts | None
) -> ModelErrorObservation:
    """What a model call that raised ``exc`` after ``elapsed`` seconds records."""
    exceeded = exc if isinstance(exc, ContextExceeded) else None
    return ModelErrorObservation(
        code=exc.code if isinstance(exc, ModelError) else "model_error",
        error=f"{type(exc).__name__}: {exc}",
        n_prompt_tokens=exceeded.n_prompt_tokens if exceeded else None,
        n_ctx=exceeded.n_ctx if exceeded else None,
        usage=step_usage(Usage(model_s=elapsed), counts),
    )


__all__ = ["Replies", "model_error"]
