"""The model's replies in one step, and the action the step's reply is (or why it is none).

A guide may ask the model more than once in a step (to score, to choose, under a schema of its
own); every call goes through :meth:`Replies.generate`, so each is held to the grounding rules
and the step knows which replies the model wrote.
"""

from __future__ import annotations

from typing import Any

from edge_agentd.agent.events import AgentState, MadeBy, ModelErrorObservation, Usage
from edge_agentd.agent.language import Language
from edge_agentd.agent.observed import Evidence, gather
from edge_agentd.agent.parsing import parse_action
from edge_agentd.agent.protocol import (
    Completion,
    ContextExceeded,
    ModelError,
    ModelHandle,
    TokenCounts,
    step_usage,
)
from edge_agentd.agent.run import RunCache, Step
from edge_agentd.agent.validators import Validators


class Replies:
    """What the model wrote in one step of ``state``'s run, each reply asked under the step's
    schema unless a guide asks under another, held to the grounding rules all the same."""

    def __init__(
        self,
        handle: ModelHandle,
        validators: Validators,
        state: AgentState,
        names: dict[str, None],
        cache: RunCache,
        *,
        last_step: bool,
        options: dict[str, Any],
    ) -> None:
        self.handle = handle
        self.validators = validators
        self.state = state
        self.names = names
        self.cache = cache
        self.last_step = last_step
        self.options = options
        self.written: list[str] = []
        workflow = cache.workflow
        allowed = None if workflow is None else workflow.allowed_skills
        self.schema = self.held(validators.registry.action_schema(allowed, cache.choices or ()))

    def held(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with its answer held to the grounding rules, where the decoding is ours."""
        return self.validators.hold(
            schema, self.state, self.names, self.cache, last_step=self.last_step
        )

    def grounded(self, answer: str) -> bool:
        """Whether the loop takes ``answer`` now: the engine offers only such sentences (one it
        would refuse would be chosen again at the retry, until the run ran out of steps)."""
        return self.validators.accepts(answer, self.state, self.names, self.cache)

    def evidence(self, language: Language) -> Evidence:
        """The run's evidence so far, its question read in ``language``: gathered in the run's
        cache, so a guide and the grounding rules reading it in one step read it once."""
        return gather(
            self.state, self.validators.registry, self.names, self.cache.evidence, language
        )

    def generate(self, text: str, **more: Any) -> str:
        """The model's reply to ``text``: what a guide calls to ask it. ``calls_only=True``
        asks for a call alone (the step's schema without its answer); a collection of skill names,
        for a call of one of them; ``calls_with``, for some of those skills, the very calls
        (their arguments) one of which it must be."""
        calls_only = more.pop("calls_only", False)
        calls_with: dict[str, list[dict[str, Any]]] = more.pop("calls_with", None) or {}
        if calls_only:
            branches = self.schema.get("oneOf", ())
            calls = [
                _held_to(b, calls_with)
                for b in branches
                if "skill_name" in b.get("properties", {})
                and (calls_only is True or b["properties"]["skill_name"].get("const") in calls_only)
            ]
            if calls:
                more["action_schema"] = {**self.schema, "oneOf": calls}
        elif isinstance(more.get("action_schema"), dict):
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
        if self.written and raw is self.written[-1]:
            return "model"  # the reply as the model returned it, the common case
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
        # A model spoken to in its own tool format replies in it; the events are the same.
        calls = self.handle.chat_format.calls
        parse = parse_action if calls is None else calls.parse
        return parse(str(raw), names, usage, made_by=self.maker(raw), call_id=call_id)


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


def _held_to(branch: dict[str, Any], calls_with: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``branch`` (a skill's, in an action schema) with its arguments held to the calls
    ``calls_with`` lists for its skill, where it lists any."""
    calls = calls_with.get(branch["properties"]["skill_name"].get("const"), [])
    if not calls:
        return branch
    properties = {**branch["properties"], "arguments": {"enum": calls}}
    return {**branch, "properties": properties}


__all__ = ["Replies", "model_error"]
