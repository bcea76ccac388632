"""One run: what it was asked (:class:`RunOptions`), what it has done (:class:`RunRecord`), and
a thread's turn at carrying it (:class:`Turn`), which is the loop of docs/design.md, "The loop's
contract": step, append, dispatch, until a stop.

The record holds every counter of the loop, off the stack, so that when a skill hangs a fresh
thread can carry the run on from where it was (:mod:`~edge_agentd.agent.supervision`). Its
``generation`` says whose turn it is: the turn that started it is 0, each hand-over moves it on,
and an event from an earlier turn (an abandoned thread whose skill returned at last) is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from edge_agentd.agent.checks import check_count
from edge_agentd.agent.events import (
    AgentState,
    CallSkillAction,
    Event,
    FinalAnswerAction,
    InterruptedObservation,
    MaxIterationsObservation,
    ModelErrorObservation,
    SkillResultObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from edge_agentd.agent.jsonvalues import compact_json, format_validation_error, to_jsonable
from edge_agentd.agent.workflow import Result, Workflow

if TYPE_CHECKING:
    from edge_agentd.agent.loop import Agent
    from edge_agentd.agent.registry import SkillSpec

log = logging.getLogger(__name__)

Step = CallSkillAction | FinalAnswerAction | ValidationErrorObservation | ModelErrorObservation
DEFAULT_MAX_ITERATIONS = 8
DEFAULT_MAX_RETRIES = 3
_SUMMARY_CHARS = 200


class Superseded(Exception):
    """Raised in an abandoned loop thread when its stuck skill finally returns."""


class SkillStillRunning(Exception):
    """A skill's previous call hung and has not returned yet, so it is not started again."""


@dataclasses.dataclass(frozen=True, eq=False)
class RunOptions:
    """What one run is asked to do, checked when it is made: a caller's mistakes raise here.

    ``deadline`` is a ``time.monotonic()`` instant and ``should_stop`` a cancel check, both
    looked at between steps, while a skill runs and inside the model's calls; ``on_event`` sees
    each event as it is appended; ``model_options`` go to the model with every step."""

    query: str
    workflow: Workflow | None = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    max_retries: int = DEFAULT_MAX_RETRIES
    deadline: float | None = None
    should_stop: Callable[[], bool] | None = None
    on_event: Callable[[Event], None] | None = None
    model_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        # These come from callers that types do not reach (a script, a plugin): say what is wrong.
        if not isinstance(self.query, str):
            raise TypeError(f"query must be a str, not {type(self.query).__name__}")
        check_count("max_iterations", self.max_iterations, 1)
        check_count("max_retries", self.max_retries, 0)
        deadline = self.deadline
        if deadline is not None and (
            isinstance(deadline, bool) or not isinstance(deadline, int | float)
        ):
            raise TypeError("deadline must be a time.monotonic() instant")
        if self.should_stop is not None and not callable(self.should_stop):
            raise TypeError("should_stop must be callable")

    @classmethod
    def of(
        cls,
        workflow_or_query: Workflow | str,
        query: str | None = None,
        max_iterations: int | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        *,
        deadline: float | None = None,
        should_stop: Callable[[], bool] | None = None,
        on_event: Callable[[Event], None] | None = None,
        **model_options: Any,
    ) -> RunOptions:
        """The options of ``Agent.run``'s arguments: a query, or a workflow with a query.
        ``max_iterations`` defaults to the workflow's, else 8."""
        if isinstance(workflow_or_query, Workflow):
            if query is None:
                raise TypeError(f"run(workflow) needs a query: run({workflow_or_query.name!r} ...)")
            workflow: Workflow | None = workflow_or_query
        elif isinstance(workflow_or_query, str):
            if query is not None:
                raise TypeError("give the query once: run(query) or run(workflow, query=...)")
            workflow, query = None, workflow_or_query
        else:
            raise TypeError(
                f"run takes a query string or a Workflow, not {type(workflow_or_query).__name__}"
            )
        if max_iterations is None:
            max_iterations = (workflow.max_iterations if workflow else None) or (
                DEFAULT_MAX_ITERATIONS
            )
        return cls(
            query,
            workflow,
            max_iterations,
            max_retries,
            deadline=deadline,
            should_stop=should_stop,
            on_event=on_event,
            model_options=model_options,
        )


@dataclasses.dataclass(eq=False)
class RunRecord:
    """One run's state and counters, kept off the stack so another thread can carry it on."""

    options: RunOptions
    state: AgentState = dataclasses.field(init=False)
    retries_left: int = dataclasses.field(init=False)
    iteration: int = 0
    last_action: CallSkillAction | FinalAnswerAction | None = None
    generation: int = 0
    """Whose turn it is: events from any other are refused."""
    in_skill: tuple[SkillSpec, float, list[str]] | None = None
    """While a skill runs: (the skill, its overrun instant or inf, the skills available)."""
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.state = AgentState(query=self.options.query)
        self.state.context.workflow = self.options.workflow
        self.retries_left = self.options.max_retries

    def append(self, event: Event, generation: int) -> None:
        """Append and announce an event, unless turn ``generation`` at the run has passed."""
        with self.lock:
            if generation != self.generation:
                raise Superseded
            self.state.stream.append(event)
            if self.options.on_event is not None:
                self.options.on_event(event)

    def interruption(self) -> str | None:
        """Why the run must stop now (``cancelled`` or ``deadline``), or None."""
        should_stop, deadline = self.options.should_stop, self.options.deadline
        if should_stop is not None and should_stop():
            return "cancelled"
        if deadline is not None and time.monotonic() >= deadline:
            return "deadline"
        return None

    def enter_skill(self, skill: SkillSpec, available: list[str]) -> None:
        timeout = skill.timeout_s
        overrun = math.inf if timeout is None else time.monotonic() + timeout
        self.in_skill = (skill, overrun, available)

    def leave_skill(self, generation: int) -> None:
        with self.lock:
            if generation == self.generation:
                self.in_skill = None


class Turn:
    """One thread's turn at a run: the loop, carried on from wherever the record says."""

    def __init__(self, agent: Agent, record: RunRecord, generation: int) -> None:
        self.agent = agent
        self.record = record
        self.generation = generation

    def append(self, event: Event) -> None:
        self.record.append(event, self.generation)

    def stopped(self) -> bool:
        """Decision 6: a pending deadline or cancel ends the run with an InterruptedObservation."""
        reason = self.record.interruption()
        if reason is None:
            return False
        self.append(InterruptedObservation(reason=reason))
        return True

    def loop(self) -> None:
        run, options = self.record, self.record.options
        state, workflow = run.state, options.workflow
        while run.iteration < options.max_iterations:
            if self.stopped():
                return
            run.iteration += 1
            with _interruptible(self.agent.handle, options):
                event = self.agent.step(
                    state,
                    last_step=run.iteration >= options.max_iterations,
                    deadline=options.deadline,
                    should_stop=options.should_stop,
                    **options.model_options,
                )
            # A deadline or cancel that landed during the step ends the run here: the model was
            # stopped inside its call, so a parse failure or model error is the interruption's,
            # a skill it asked for is not started, and an answer made past the deadline or
            # after the cancel is not reported as the run's.
            if self.stopped():
                return
            observed: Step | SkillResultObservation | ToolErrorObservation = event
            if isinstance(event, CallSkillAction):
                run.last_action = event
                self.append(event)
                observed = self.dispatch(event)
            elif isinstance(event, FinalAnswerAction):
                run.last_action = event
                self.append(event)
                failed = self.ungrounded(event) or _check_final_answer(event, state, workflow)
                if failed is None:
                    return
                observed = failed
            if isinstance(observed, ValidationErrorObservation | ModelErrorObservation):
                if self.stopped():
                    return
                will_retry = run.retries_left > 0 and run.iteration < options.max_iterations
                run.retries_left -= 1
                self.append(observed.model_copy(update={"will_retry": will_retry}))
                if run.retries_left < 0:
                    return
                continue
            self.append(observed)
        if self.stopped():
            return
        self.append(
            MaxIterationsObservation(
                iterations=options.max_iterations,
                last_action_summary=_summary(run.last_action),
                partial_state=state.snapshot(),
            )
        )

    def ungrounded(self, action: FinalAnswerAction) -> ValidationErrorObservation | None:
        """The grounding rule ``action`` breaks, as the feedback the model sees next, or None:
        none when the agent has no grounding, as the seed signs it (docs/design.md,
        "Grounding": in the daemon every answer, whoever made it, passes these)."""
        grounding = self.agent.grounding
        if grounding is None:
            return None
        state = self.record.state
        names = self.agent.skill_names(state.workflow)
        return grounding.check(action.answer, state, self.agent.registry, names)

    def dispatch(
        self, action: CallSkillAction
    ) -> SkillResultObservation | ToolErrorObservation | ValidationErrorObservation:
        agent, run = self.agent, self.record
        names = agent.skill_names(run.options.workflow)
        spec = agent.registry.get(action.skill_name) if action.skill_name in names else None
        if spec is None:
            return ToolErrorObservation(
                skill_name=action.skill_name,
                error=f"there is no skill named {action.skill_name!r}",
                available_skills=list(names),
                call_id=action.call_id,
            )
        try:
            arguments = spec.validate_arguments(action.arguments)
        except ValidationError as exc:
            return ValidationErrorObservation(
                validator_name="skill_arguments",
                error_type="invalid_arguments",
                feedback=format_validation_error(spec.name, exc),
                call_id=action.call_id,
            )
        # A value the skill does not list now (a sensor that is not there) is an argument
        # error, shown with the values it may take: a failed call is not the end.
        unchosen = spec.unchosen(arguments, dict(agent.run_choices(run.state)).get(spec.name, ()))
        if unchosen is not None:
            return ValidationErrorObservation(
                validator_name="skill_arguments",
                error_type="invalid_arguments",
                feedback=unchosen,
                call_id=action.call_id,
            )
        # Every skill is watched: its timeout if it has one, the run's deadline and cancel always.
        run.enter_skill(spec, list(names))
        try:
            agent.threads.check_free(spec)
            result = agent.registry.call(spec, arguments)
            return _result(spec.name, result, agent.max_result_chars, action.call_id)
        except SkillStillRunning as exc:
            error = str(exc)
        except BaseException as exc:  # noqa: BLE001 - a skill's KeyboardInterrupt, GeneratorExit,
            # SystemExit or odd result is its own failure: the model sees it, the run goes on.
            error = f"{type(exc).__name__}: {_safe_str(exc)}"
            log.info("skill %s raised %s", spec.name, error)
        finally:
            run.leave_skill(self.generation)
        return ToolErrorObservation(
            skill_name=spec.name, error=error, available_skills=list(names), call_id=action.call_id
        )


def _interruptible(handle: object, options: RunOptions) -> contextlib.AbstractContextManager[Any]:
    """The model's own way to stop every call of a step inside it (a guidance engine's scoring
    calls get no deadline of their own), where it has one: ``LlamaModel.interruptible``."""
    interruptible = getattr(handle, "interruptible", None)
    if not callable(interruptible) or (options.deadline is None and options.should_stop is None):
        return contextlib.nullcontext()
    stops: contextlib.AbstractContextManager[Any] = interruptible(
        options.deadline, options.should_stop
    )
    return stops


def _safe_str(value: object) -> str:
    """``str(value)``, or a placeholder when that itself raises."""
    try:
        return str(value)
    except Exception as exc:  # noqa: BLE001 - an exception whose __str__ raises
        return f"<unprintable: {type(exc).__name__}>"


def _summary(event: CallSkillAction | FinalAnswerAction | None) -> str:
    if event is None:
        return "no action was taken"
    if isinstance(event, FinalAnswerAction):
        text = f"final_answer {event.answer!r}"
    else:
        text = f"call {event.skill_name} {compact_json(event.arguments)}"
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def _result(
    skill_name: str, result: Any, max_chars: int, call_id: str | None
) -> SkillResultObservation:
    value = to_jsonable(result)
    if value is None or isinstance(value, bool | int | float):
        return SkillResultObservation(skill_name=skill_name, result=value, call_id=call_id)
    text = value if isinstance(value, str) else compact_json(value)
    if len(text) <= max_chars:
        return SkillResultObservation(skill_name=skill_name, result=value, call_id=call_id)
    cut = len(text) - max_chars
    return SkillResultObservation(
        skill_name=skill_name,
        result=f"{text[:max_chars]}…[truncated {cut} more characters]",
        truncated=True,
        call_id=call_id,
    )


def _check_final_answer(
    action: FinalAnswerAction, state: AgentState, workflow: Workflow | None
) -> ValidationErrorObservation | None:
    for validator in workflow.validators if workflow else ():
        name = getattr(validator, "__name__", type(validator).__name__)
        try:
            verdict = validator(action, state)
        except Exception as exc:
            log.exception("final-answer validator %s raised", name)
            verdict = Result(False, f"The answer could not be checked ({type(exc).__name__}).")
        if not isinstance(verdict, Result):
            raise TypeError(f"validator {name} must return a Result, not {type(verdict).__name__}")
        if not verdict.ok:
            return ValidationErrorObservation(
                validator_name=name, error_type=None, feedback=verdict.feedback
            )
    return None


__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_MAX_RETRIES",
    "RunOptions",
    "RunRecord",
    "SkillStillRunning",
    "Superseded",
    "Turn",
]
