"""A run's records, the data beside the loop (:mod:`~edge_agentd.agent.loop`): what it was asked
(:class:`RunOptions`, checked when made), what it has done (:class:`RunRecord`), and what it
keeps for its subsystems between steps (:class:`RunCache`).

The record holds every counter of the loop, off the stack, so that when a skill hangs a fresh
thread can carry the run on from where it was (:mod:`~edge_agentd.agent.supervision`). Its
``generation`` says whose turn it is: the turn that started it is 0, each hand-over moves it on,
and an event from an earlier turn (an abandoned thread whose skill returned at last) is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

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
    ValidationErrorObservation,
)
from edge_agentd.agent.jsonvalues import compact_json, to_jsonable
from edge_agentd.agent.observed import Gathered
from edge_agentd.agent.prompt import ChatFormat
from edge_agentd.agent.registry import RunChoices, SkillSpec
from edge_agentd.agent.workflow import Workflow

Step = CallSkillAction | FinalAnswerAction | ValidationErrorObservation | ModelErrorObservation
"""What one step returns: an action, or the observation of a reply that was none."""
DEFAULT_MAX_ITERATIONS = 8
DEFAULT_MAX_RETRIES = 3
_SUMMARY_CHARS = 200
Arguments = ParamSpec("Arguments")
Owner = TypeVar("Owner")
Ran = TypeVar("Ran")


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

    @classmethod
    def given(cls, options: RunOptions | Workflow | str, *args: Any, **kwargs: Any) -> RunOptions:
        """``options``, or the options of :meth:`of`'s arguments."""
        if not isinstance(options, RunOptions):
            return cls.of(options, *args, **kwargs)
        if args or kwargs:
            raise TypeError("start(RunOptions) takes nothing else but on_done")
        return options


def with_arguments_of(
    of: Callable[Arguments, RunOptions],
) -> Callable[[Callable[[Owner, RunOptions], Ran]], Callable[Concatenate[Owner, Arguments], Ran]]:
    """A method given a RunOptions, made to take ``of``'s arguments instead: they are written
    once, there, and a type checker still checks each call against them."""

    def takes_arguments(
        method: Callable[[Owner, RunOptions], Ran],
    ) -> Callable[Concatenate[Owner, Arguments], Ran]:
        @functools.wraps(method)
        def with_arguments(
            owner: Owner, /, *args: Arguments.args, **kwargs: Arguments.kwargs
        ) -> Ran:
            return method(owner, of(*args, **kwargs))

        return with_arguments

    return takes_arguments


@dataclasses.dataclass(eq=False)
class RunCache:
    """What a run keeps for its subsystems between steps: with the run, never on its state
    (which stays the seed's ``query`` and ``stream``), so each step reads only what is new.

    A step taken outside a run (``Agent.step(state)``) starts from an empty one."""

    choices: RunChoices | None = None
    """The skills' arguments' choices as the run found them at its first step, so its prompt,
    grammar and checks agree and its prompt stays append-only."""
    prompt_key: tuple[ChatFormat, str] | None = None
    """What the prompt so far was rendered for: the chat format and the system text."""
    prompt: str = ""
    """The prompt rendered so far."""
    rendered: int = 0
    """How many of the stream's events :attr:`prompt` renders."""
    calls: int = 0
    """How many calls the first :attr:`counted` events of the stream hold (the next call's id)."""
    counted: int = 0
    evidence: Gathered = dataclasses.field(default_factory=Gathered)
    """What grounding has gathered of the run so far."""
    workflow: Workflow | None = None
    """The workflow the run follows, if any."""

    def calls_so_far(self, state: AgentState) -> int:
        """How many calls ``state``'s stream holds, counting only the events added since."""
        events = state.stream.root
        if self.counted > len(events):
            self.calls = self.counted = 0
        for event in events[self.counted :]:
            self.calls += isinstance(event, CallSkillAction)
        self.counted = len(events)
        return self.calls


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
    cache: RunCache = dataclasses.field(default_factory=RunCache)

    def __post_init__(self) -> None:
        self.state = AgentState(query=self.options.query)
        self.cache.workflow = self.options.workflow
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

    def stopped(self, generation: int) -> bool:
        """Whether a pending deadline or cancel ends the run now (Decision 6): it then ends with
        an InterruptedObservation."""
        reason = self.interruption()
        if reason is not None:
            self.append(InterruptedObservation(reason=reason), generation)
        return reason is not None

    def retry(
        self, failed: ValidationErrorObservation | ModelErrorObservation, generation: int
    ) -> bool:
        """Spend one retry on ``failed`` and append it; whether the run goes on. The counter is
        never reset."""
        will_retry = self.retries_left > 0 and self.iteration < self.options.max_iterations
        self.retries_left -= 1
        self.append(failed.model_copy(update={"will_retry": will_retry}), generation)
        return self.retries_left >= 0

    def ran_out(self, generation: int) -> None:
        """End the run that used all its iterations without an answer."""
        ended = MaxIterationsObservation(
            iterations=self.options.max_iterations,
            last_action_summary=summary(self.last_action),
            partial_state=self.state.snapshot(),
        )
        self.append(ended, generation)

    def enter_skill(self, skill: SkillSpec, available: list[str]) -> None:
        """``skill`` runs now: the watch sees it (its timeout if it has one, the run's deadline
        and cancel always) until it leaves."""
        timeout = skill.timeout_s
        overrun = math.inf if timeout is None else time.monotonic() + timeout
        self.in_skill = (skill, overrun, available)

    def leave_skill(self, generation: int) -> None:
        with self.lock:
            if generation == self.generation:
                self.in_skill = None


def skill_result(
    skill_name: str, result: Any, max_chars: int, call_id: str | None
) -> SkillResultObservation:
    """What a run records of a skill's return value: JSON-safe, its text cut at ``max_chars``."""
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


def summary(event: CallSkillAction | FinalAnswerAction | None) -> str:
    """A run's last action in a line (a ``MaxIterationsObservation``'s ``last_action_summary``)."""
    if event is None:
        return "no action was taken"
    if isinstance(event, FinalAnswerAction):
        text = f"final_answer {event.answer!r}"
    else:
        text = f"call {event.skill_name} {compact_json(event.arguments)}"
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def safe_str(value: object) -> str:
    """``str(value)``, or a placeholder when that itself raises."""
    try:
        return str(value)
    except Exception as exc:  # noqa: BLE001 - an exception whose __str__ raises
        return f"<unprintable: {type(exc).__name__}>"


__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_MAX_RETRIES",
    "RunCache",
    "RunOptions",
    "RunRecord",
    "SkillStillRunning",
    "Step",
    "Superseded",
    "safe_str",
    "skill_result",
    "summary",
    "with_arguments_of",
]
