"""The Agent: the model's decisions, the registry's dispatch and the EventStream, in one loop.

Read top to bottom, as the seed reads: :meth:`Agent.run` starts a run and waits for it;
:meth:`Agent.loop` is the loop itself (step, append, dispatch, until a stop); :meth:`Agent.step`
asks the model once and parses its reply; :meth:`Agent.dispatch` calls a skill. Beside it are
the run's records (:mod:`~edge_agentd.agent.run`), what the model reads
(:mod:`~edge_agentd.agent.prompter`), the model's replies in a step
(:mod:`~edge_agentd.agent.replies`), what holds an answer (:mod:`~edge_agentd.agent.validators`)
and the threads a run executes on (:mod:`~edge_agentd.agent.supervision`); none of them calls
back into the Agent.

The Agent holds no conversation state: everything lives in ``AgentState.stream``, so every
``run`` starts from a blank page; it returns an AgentState or raises only for a caller's bug.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import time
from typing import Any

from pydantic import ValidationError

from edge_agentd.agent.checks import check_count
from edge_agentd.agent.events import (
    AgentState,
    CallSkillAction,
    Event,
    FinalAnswerAction,
    ModelErrorObservation,
    SkillResultObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.guide import PLAIN, Guide
from edge_agentd.agent.jsonvalues import format_validation_error
from edge_agentd.agent.prompter import Prompter
from edge_agentd.agent.protocol import ModelHandle, SupportsGenerate, full_handle
from edge_agentd.agent.registry import Registry, SkillSpec, get_registry
from edge_agentd.agent.replies import Replies, model_error
from edge_agentd.agent.run import (
    RunCache,
    RunOptions,
    RunRecord,
    SkillStillRunning,
    Step,
    safe_str,
    skill_result,
    with_arguments_of,
)
from edge_agentd.agent.supervision import OnDone, RunThreads, RunTicket, shared_run_threads
from edge_agentd.agent.validators import Validators
from edge_agentd.agent.workflow import Soul, Workflow

log = logging.getLogger(__name__)
_UNSTOPPED = contextlib.nullcontext()
"""A step nothing stops inside (it holds no state: every step may enter it)."""


@dataclasses.dataclass
class Agent:
    """Runs the bounded loop: ask the model, dispatch its action, record everything."""

    model: ModelHandle | SupportsGenerate
    registry: Registry = dataclasses.field(default_factory=get_registry)
    soul: Soul | None = dataclasses.field(default=None, kw_only=True)
    max_result_chars: int = dataclasses.field(default=4000, kw_only=True)
    guidance: Guide | None = dataclasses.field(default=None, kw_only=True)
    """Help for a small model (a :class:`~edge_agentd.agent.guide.Guide`, such as
    :class:`edge_agentd.guidance.guidance.Guidance`); None is the plain guide: the model alone."""
    threads: RunThreads = dataclasses.field(default_factory=shared_run_threads, kw_only=True)
    """The threads runs execute on and the skills that hung (by default, every agent's)."""
    grounding: Grounding | None = dataclasses.field(default=None, kw_only=True)
    """The grounding rules (:class:`~edge_agentd.agent.grounding.Grounding`), run first among
    a run's validators; None, as the seed signs the Agent: a final answer ends the run."""

    def __post_init__(self) -> None:
        _check_arguments(self)
        self.handle: ModelHandle = full_handle(self.model)
        """The model with the whole ModelHandle protocol: the bare ones get its defaults."""
        self.guide: Guide = PLAIN if self.guidance is None else self.guidance
        """The help the loop always asks: the plain guide when given none."""
        self.validators = Validators(self.grounding, self.registry, self.handle)
        soul, rules = self.soul or Soul(), self.validators.rules
        self.prompter = Prompter(self.handle, self.registry, soul, self.guide, rules)

    def close(self) -> None:
        """Stop the idle run threads (later runs start new ones)."""
        self.threads.close()

    # -- the prompt, for callers that warm a model or read what it reads -------------------------

    def system_prompt(self, workflow: Workflow | None = None) -> str:
        """The system part of every prompt for ``workflow``, with the choices the skills list
        now."""
        allowed = None if workflow is None else workflow.allowed_skills
        return self.prompter.system(workflow, self.registry.choices(allowed))[0]

    def preamble(self, workflow: Workflow | None = None) -> str:
        """The prompt text shared by every request: what a model can evaluate once and keep."""
        return self.handle.chat_format.preamble(self.system_prompt(workflow))

    def render_prompt(self, state: AgentState) -> str:
        """The prompt of ``state``'s next step, as :meth:`step` renders it."""
        cache = RunCache()
        return self.prompter.render(state, self.prompter.run_system(cache)[0], cache)

    # -- the run ------------------------------------------------------------------------------

    @with_arguments_of(RunOptions.of)
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
        record = RunRecord(RunOptions.given(options, *args, **kwargs))
        return self.threads.start(record, functools.partial(self.loop, record), on_done)

    def loop(self, record: RunRecord, generation: int = 0) -> None:
        """Turn ``generation`` at ``record``'s run, on one thread: the loop of docs/design.md,
        "The loop's contract", carried on from wherever the record says."""
        options, state, cache = record.options, record.state, record.cache
        while record.iteration < options.max_iterations:
            if record.stopped(generation):
                return
            record.iteration += 1
            with _interruptible(self.handle, options):
                event = self.step(
                    state,
                    last_step=record.iteration >= options.max_iterations,
                    cache=cache,
                    deadline=options.deadline,
                    should_stop=options.should_stop,
                    **options.model_options,
                )
            # A deadline or cancel that landed during the step ends the run here: the model was
            # stopped inside its call, so a parse failure or model error is the interruption's,
            # a skill it asked for is not started, and an answer made past the deadline or
            # after the cancel is not reported as the run's.
            if record.stopped(generation):
                return
            observed: Event | None = event
            if isinstance(event, CallSkillAction | FinalAnswerAction):
                record.last_action = event
                record.append(event, generation)
            if isinstance(event, CallSkillAction):
                observed = self.dispatch(event, record, generation)
            elif isinstance(event, FinalAnswerAction):
                names = self.prompter.run_system(cache)[1]
                observed = self.validators.refusal(event, state, names, cache)
                if observed is None:
                    return  # the seed: a final answer that passes ends the run at once
            if isinstance(observed, ValidationErrorObservation | ModelErrorObservation):
                if record.stopped(generation) or not record.retry(observed, generation):
                    return
            elif observed is not None:
                record.append(observed, generation)
        if not record.stopped(generation):
            record.ran_out(generation)

    # -- one step -----------------------------------------------------------------------------

    def step(
        self,
        state: AgentState,
        *,
        last_step: bool = False,
        cache: RunCache | None = None,
        **opts: Any,
    ) -> Step:
        """Ask the model once and parse its reply. Never appends to ``state.stream``.

        ``last_step`` says no step follows: the guide then has the model answer. ``cache`` is
        what the run kept of its earlier steps (a step outside a run starts from none)."""
        if not isinstance(state, AgentState):
            raise TypeError(f"step takes an AgentState, not {type(state).__name__}")
        kept = RunCache() if cache is None else cache
        system, names, skills = self.prompter.run_system(kept)
        self.handle.take_tokens()  # what came before this step is not its cost
        prompt = self.prompter.render(state, system, kept)
        # Whatever schema a strategy asks for, its answer is held to the grounding rules.
        replies = Replies(
            self.handle, self.validators, state, names, kept, last_step=last_step, options=opts
        )
        started = time.perf_counter()
        try:
            raw = self.guide.reply(
                self.handle,
                state,
                prompt,
                skills,
                version=self.registry.version,
                last_step=last_step,
                generate=replies.generate,
                grounded=replies.grounded,
                evidence=replies.evidence,
            )
        except Exception as exc:  # noqa: BLE001 - a model error is recorded, never raised
            return model_error(exc, time.perf_counter() - started, self.handle.take_tokens())
        elapsed, call_id = time.perf_counter() - started, f"call_{kept.calls_so_far(state) + 1}"
        return replies.action(raw, elapsed, names, self.handle.take_tokens(), call_id)

    # -- one call -----------------------------------------------------------------------------

    def dispatch(
        self, action: CallSkillAction, record: RunRecord, generation: int
    ) -> SkillResultObservation | ToolErrorObservation | ValidationErrorObservation:
        """Call the skill ``action`` asks for, watched (its timeout if it has one, the run's
        deadline and cancel always); what it returned, or why it could not run."""
        names = self.prompter.run_system(record.cache)[1]
        checked = _checked(action, names, self.registry, record.cache)
        if not isinstance(checked, tuple):
            return checked
        spec, arguments = checked
        record.enter_skill(spec, list(names))
        try:
            self.threads.check_free(spec)
            result = self.registry.call(spec, arguments)
            return skill_result(spec.name, result, self.max_result_chars, action.call_id)
        except SkillStillRunning as exc:
            error = str(exc)
        except BaseException as exc:  # noqa: BLE001 - a skill's KeyboardInterrupt, GeneratorExit,
            # SystemExit or odd result is its own failure: the model sees it, the run goes on.
            error = f"{type(exc).__name__}: {safe_str(exc)}"
            log.info("skill %s raised %s", spec.name, error)
        finally:
            record.leave_skill(generation)
        return ToolErrorObservation(
            skill_name=spec.name, error=error, available_skills=list(names), call_id=action.call_id
        )


def _check_arguments(agent: Agent) -> None:
    """The contract's caller bugs: no model, a soul, guide or grounding of the wrong type (a
    bare string), and a result size under 64 characters."""
    if not callable(getattr(agent.model, "generate", None)):
        raise TypeError("Agent needs a model with a generate(prompt, **kwargs) method")
    for name, value, kind in (
        ("soul", agent.soul, Soul),
        ("guidance", agent.guidance, Guide),
        ("grounding", agent.grounding, Grounding),
    ):
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, not {type(value).__name__}")
    check_count("max_result_chars", agent.max_result_chars, 64)


def _interruptible(handle: object, options: RunOptions) -> contextlib.AbstractContextManager[Any]:
    """The model's own way to stop every call of a step inside it (a guidance engine's scoring
    calls get no deadline of their own), where it has one: ``LlamaModel.interruptible``."""
    if options.deadline is None and options.should_stop is None:
        return _UNSTOPPED
    interruptible = getattr(handle, "interruptible", None)
    if not callable(interruptible):
        return _UNSTOPPED
    stops: contextlib.AbstractContextManager[Any] = interruptible(
        options.deadline, options.should_stop
    )
    return stops


def _checked(
    action: CallSkillAction, names: dict[str, None], registry: Registry, cache: RunCache
) -> tuple[SkillSpec, dict[str, Any]] | ToolErrorObservation | ValidationErrorObservation:
    """The skill ``action`` calls and its arguments, checked; or why it cannot be called."""
    spec = registry.get(action.skill_name) if action.skill_name in names else None
    if spec is None:
        return ToolErrorObservation(
            skill_name=action.skill_name,
            error=f"there is no skill named {action.skill_name!r}",
            available_skills=list(names),
            call_id=action.call_id,
        )
    try:
        arguments = spec.validate_arguments(action.arguments)
        # A value the skill does not list now (a sensor that is not there) is an argument
        # error, shown with the values it may take: a failed call is not the end.
        unchosen = spec.unchosen(arguments, dict(cache.choices or ()).get(spec.name, ()))
    except ValidationError as exc:
        unchosen = format_validation_error(spec.name, exc)
    if unchosen is None:
        return spec, arguments
    return ValidationErrorObservation(
        validator_name="skill_arguments",
        error_type="invalid_arguments",
        feedback=unchosen,
        call_id=action.call_id,
    )


__all__ = ["Agent"]
