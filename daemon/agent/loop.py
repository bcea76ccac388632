"""The Agent: the model's decisions, the registry's dispatch and the EventStream, in one loop.

The Agent holds no conversation state: everything lives in ``AgentState.stream``, so every ``run``
starts from a blank page. ``run`` returns an AgentState or raises only for a caller's bug. It is
:meth:`Agent.start` and then the wait: the loop itself is :class:`~edge_agentd.agent.run.Turn`,
on a thread of :mod:`~edge_agentd.agent.supervision` (docs/design.md, "Where to start reading").
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from edge_agentd.agent.checks import check_count
from edge_agentd.agent.events import (
    AgentState,
    CallSkillAction,
    MadeBy,
    ModelErrorObservation,
    Usage,
)
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.guide import Guide
from edge_agentd.agent.parsing import parse_action
from edge_agentd.agent.prompt import ChatFormat, render_event, render_system
from edge_agentd.agent.protocol import (
    Completion,
    ContextExceeded,
    ModelError,
    ModelHandle,
    SupportsGenerate,
    full_handle,
    step_usage,
)
from edge_agentd.agent.registry import Registry, RunChoices, get_registry
from edge_agentd.agent.run import RunOptions, RunRecord, Step, Turn
from edge_agentd.agent.supervision import OnDone, RunThreads, RunTicket, shared_run_threads
from edge_agentd.agent.workflow import Soul, Workflow

Arguments = ParamSpec("Arguments")
Ran = TypeVar("Ran")


def _with_arguments_of(
    of: Callable[Arguments, RunOptions],
) -> Callable[[Callable[[Agent, RunOptions], Ran]], Callable[Concatenate[Agent, Arguments], Ran]]:
    """A method given a RunOptions, made to take ``of``'s arguments instead: they are written
    once, there, and a type checker still checks each call against them."""

    def takes_arguments(
        method: Callable[[Agent, RunOptions], Ran],
    ) -> Callable[Concatenate[Agent, Arguments], Ran]:
        @functools.wraps(method)
        def with_arguments(
            agent: Agent, /, *args: Arguments.args, **kwargs: Arguments.kwargs
        ) -> Ran:
            return method(agent, of(*args, **kwargs))

        return with_arguments

    return takes_arguments


@dataclasses.dataclass
class Agent:
    """Runs the bounded loop: ask the model, dispatch its action, record everything."""

    model: ModelHandle | SupportsGenerate
    registry: Registry = dataclasses.field(default_factory=get_registry)
    soul: Soul | None = dataclasses.field(default=None, kw_only=True)
    max_result_chars: int = dataclasses.field(default=4000, kw_only=True)
    guidance: Guide | None = dataclasses.field(default=None, kw_only=True)
    """Help for a small model (:class:`~edge_agentd.agent.guide.Guide`, such as
    :class:`edge_agentd.guidance.guidance.Guidance`); None, plain: the model alone."""
    threads: RunThreads = dataclasses.field(default_factory=shared_run_threads, kw_only=True)
    """The threads runs execute on and the skills that hung (by default, every agent's)."""
    grounding: Grounding | None = dataclasses.field(default=None, kw_only=True)
    """The grounding rules (:class:`~edge_agentd.agent.grounding.Grounding`), run first among
    a run's validators; None, as the seed signs the Agent: a final answer ends the run."""

    def __post_init__(self) -> None:
        # The contract's caller bugs: no model, and a soul or guidance given as a bare string.
        if not isinstance(self.model, SupportsGenerate):
            raise TypeError("Agent needs a model with a generate(prompt, **kwargs) method")
        for name, value, kind in (
            ("soul", self.soul, Soul),
            ("guidance", self.guidance, Guide),
            ("grounding", self.grounding, Grounding),
        ):
            if value is not None and not isinstance(value, kind):
                raise TypeError(f"{name} must be a {kind.__name__}, not {type(value).__name__}")
        check_count("max_result_chars", self.max_result_chars, 64)
        self.handle: ModelHandle = full_handle(self.model)
        """The model with the whole ModelHandle protocol: the bare ones get its defaults."""
        self._systems: dict[
            tuple[int, Soul | None, Workflow | None, RunChoices], tuple[str, dict[str, None]]
        ] = {}

    def close(self) -> None:
        """Stop the idle run threads (later runs start new ones)."""
        self.threads.close()

    # -- the prompt ---------------------------------------------------------------------------

    @property
    def chat_format(self) -> ChatFormat:
        return self.handle.chat_format

    def _system(
        self, workflow: Workflow | None, choices: RunChoices = ()
    ) -> tuple[str, dict[str, None]]:
        """(system text, allowed skill names), rendered once per registry version and choices:
        while the device has the same sensors, the preamble stays byte-identical."""
        key = (self.registry.version, self.soul, workflow, choices)
        system = self._systems.get(key)
        if system is None:
            if len(self._systems) > 64:
                self._systems.clear()
            skills = self.registry.select(None if workflow is None else workflow.allowed_skills)
            # A model that drives the loop is told the grounding rules; a guided one's calls are
            # the engine's, and its prompt closes with worked answers instead.
            example = self.guidance.answer_examples if self.guidance is not None else None
            grounding = self.grounding
            rules = grounding.rules if grounding is not None and example is None else None
            text = render_system(
                self.soul or Soul(),
                workflow,
                skills,
                example,
                rules,
                choices=dict(choices),
                calls=self.chat_format.calls,
            )
            system = self._systems[key] = (text, dict.fromkeys(s.name for s in skills))
        return system

    def skill_names(self, workflow: Workflow | None = None) -> dict[str, None]:
        """The skills the model may call under ``workflow``, in the prompt's order."""
        return self._system(workflow)[1]

    def system_prompt(self, workflow: Workflow | None = None) -> str:
        """The system part of every prompt for ``workflow``, with the choices the skills list
        now."""
        allowed = None if workflow is None else workflow.allowed_skills
        return self._system(workflow, self.registry.choices(allowed))[0]

    def preamble(self, workflow: Workflow | None = None) -> str:
        """The prompt text shared by every request: what a model can evaluate once and keep."""
        return self.chat_format.preamble(self.system_prompt(workflow))

    def run_choices(self, state: AgentState) -> RunChoices:
        """The skills' arguments' choices for ``state``'s run: read at its first step and kept,
        so the run's prompt, grammar and checks agree."""
        context = state.context
        if context.choices is None:
            workflow = state.workflow
            allowed = None if workflow is None else workflow.allowed_skills
            context.choices = self.registry.choices(allowed)
        return context.choices  # type: ignore[return-value]

    def render_prompt(self, state: AgentState) -> str:
        """The prompt for the next step, rendering only the events added since the last call."""
        return self._render(state, self._system(state.workflow, self.run_choices(state))[0])

    def _render(self, state: AgentState, system: str) -> str:
        fmt = self.chat_format
        context = state.context
        key = (fmt, system)
        if context.render_key != key:
            context.render_key, context.rendered = key, 0
            context.text = fmt.opening(system, state.query)
        events = state.stream.root
        if context.rendered < len(events):
            guidance = self.guidance
            question = state.query if guidance is not None and guidance.restate_question else None
            context.text += "".join(
                [
                    render_event(
                        e,
                        fmt,
                        question,
                        guidance.focus(self.handle, state.query, e) if guidance else None,
                        lines=guidance is not None and guidance.result_lines,
                    )
                    for e in events[context.rendered :]
                ]
            )
            context.rendered = len(events)
        return context.text

    # -- one step -----------------------------------------------------------------------------

    def step(self, state: AgentState, *, last_step: bool = False, **opts: Any) -> Step:
        """Ask the model once and parse its reply. Never appends to ``state.stream``.

        ``last_step`` says no step follows: guidance then has the model answer."""
        if not isinstance(state, AgentState):
            raise TypeError(f"step takes an AgentState, not {type(state).__name__}")
        workflow = state.workflow
        choices = self.run_choices(state)
        system, names = self._system(workflow, choices)
        self.handle.take_tokens()  # what came before this step is not its cost
        prompt = self._render(state, system)
        allowed = workflow.allowed_skills if workflow is not None else None
        started = time.perf_counter()
        # The grounding rules, where the decoding is ours and the run has them: whatever schema
        # a strategy asks for, its answer is held to them (docs/design.md, "Grounding"). A model
        # that decodes under no schema gets the plain one; the validator holds its answers to
        # the same rules. The evidence is gathered only where something reads it.
        grounding = self.grounding if self.handle.uses_action_schema else None
        schema = self.registry.action_schema(allowed, choices)
        if grounding is not None:
            schema = grounding.hold(schema, state, self.registry, names, last_step=last_step)
        written: list[str] = []

        def generate(text: str, **more: Any) -> str:
            if grounding is not None and isinstance(more.get("action_schema"), dict):
                more["action_schema"] = grounding.hold(
                    more["action_schema"], state, self.registry, names, last_step=last_step
                )
            reply = self.handle.generate(text, **{"action_schema": schema, **opts, **more})
            written.append(reply)
            return reply

        try:
            if self.guidance is None:
                raw = generate(prompt)
            else:
                skills = [spec for name in names if (spec := self.registry.get(name))]
                raw = self.guidance.reply(
                    self.handle,
                    state,
                    prompt,
                    skills,
                    version=self.registry.version,
                    last_step=last_step,
                    generate=generate,
                    # The engine offers only sentences the loop will take: one it would refuse
                    # would be chosen again at the retry, until the run ran out of steps.
                    grounded=lambda answer: self.grounding is None
                    or self.grounding.accepts(answer, state, self.registry, names),
                )
        except Exception as exc:  # noqa: BLE001 - a model error is recorded, never raised
            exceeded = exc if isinstance(exc, ContextExceeded) else None
            return ModelErrorObservation(
                code=exc.code if isinstance(exc, ModelError) else "model_error",
                error=f"{type(exc).__name__}: {exc}",
                n_prompt_tokens=exceeded.n_prompt_tokens if exceeded else None,
                n_ctx=exceeded.n_ctx if exceeded else None,
                usage=step_usage(
                    Usage(model_s=time.perf_counter() - started), self.handle.take_tokens()
                ),
            )
        elapsed = time.perf_counter() - started
        if not isinstance(raw, str):
            return ModelErrorObservation(
                code="bad_reply",
                error=f"the model returned {type(raw).__name__}, not str",
                usage=Usage(model_s=elapsed),
            )
        reported = raw.usage if isinstance(raw, Completion) else None
        usage = (
            reported.model_copy(update={"model_s": elapsed})
            if reported is not None
            else Usage(model_s=elapsed)
        )
        # The engine made it where it chose for the model (a candidate the model's likelihood
        # picked; an answer it rendered from the results, which its Completion says), else the
        # model wrote it.
        rendered = isinstance(raw, Completion) and raw.made_by == "engine"
        made_by: MadeBy = "model" if _wrote(raw, written) and not rendered else "engine"
        calls = sum(isinstance(e, CallSkillAction) for e in state.stream.root)
        calls_format = self.chat_format.calls
        parse = parse_action if calls_format is None else calls_format.parse
        action = parse(
            str(raw),
            names,
            step_usage(usage, self.handle.take_tokens()),
            made_by=made_by,
            call_id=f"call_{calls + 1}",
        )
        return action

    # -- the run ------------------------------------------------------------------------------

    @_with_arguments_of(RunOptions.of)
    def run(self, options: RunOptions) -> AgentState:
        """Run the bounded loop on a query, or on a workflow with a query, and wait for it.

        Its arguments are :meth:`RunOptions.of`'s: ``max_iterations`` defaults to the
        workflow's, else 8. ``deadline`` is a ``time.monotonic()`` instant and ``should_stop`` a
        cancel check, both looked at between steps. ``on_event`` sees each event as it is
        appended. Other options go to the model.
        """
        return self.start(options).result()

    def start(
        self,
        options: RunOptions | Workflow | str,
        *args: Any,
        on_done: OnDone | None = None,
        **kwargs: Any,
    ) -> RunTicket:
        """Start a run without waiting for it: ``options``, or :meth:`run`'s own arguments.

        ``on_done(state, error)`` is called once when it is over, on the thread that ends it.
        The caller must call the ticket's ``check()`` every few hundredths of a second until
        then (its ``result()`` does), or skill timeouts, the deadline and cancel cannot reach a
        skill that hangs."""
        if not isinstance(options, RunOptions):
            options = RunOptions.of(options, *args, **kwargs)
        elif args or kwargs:
            raise TypeError("start(RunOptions) takes nothing else but on_done")
        record = RunRecord(options)
        return self.threads.start(record, lambda turn: Turn(self, record, turn).loop(), on_done)


def _wrote(raw: str, written: list[str]) -> bool:
    """Whether the model wrote ``raw``: it is a reply ``generate`` returned, or the start of one
    closed where the engine cut it (an answer cut at the token cap keeps the model's words)."""
    text = str(raw)
    return any(
        raw is reply or str(reply) == text or str(reply).startswith(text.removesuffix('"}'))
        for reply in written
    )


__all__ = ["Agent"]
