"""Skill timeouts without a thread switch per call.

A run's loop executes on a pooled thread and calls skills inline. The caller of ``Agent.run``
waits and watches: when a skill runs past its timeout, the stuck thread is abandoned, a
ToolErrorObservation saying so is appended, and a fresh thread carries the run on from its
record. The record holds every counter of the loop, so nothing is lost in the hand-over. When
the run's deadline passes or it is cancelled while any skill runs, with a timeout or without,
the skill's thread is abandoned the same way and the run ends with an InterruptedObservation.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from edge_agent.agent.events import (
    AgentState,
    CallSkillAction,
    Event,
    FinalAnswerAction,
    InterruptedObservation,
    ToolErrorObservation,
)
from edge_agent.agent.threads import WorkerPool

log = logging.getLogger(__name__)

POLL_S = 0.05
"""How often the waiting caller looks for an overrun skill: the precision of skill timeouts."""


class Superseded(Exception):
    """Raised in an abandoned loop thread when its stuck skill finally returns."""


class SkillStillRunning(Exception):
    """A skill's previous call hung and has not returned yet, so it is not started again."""


@dataclasses.dataclass(eq=False)
class RunRecord:
    """One run's counters and hooks, kept off the stack so another thread can carry it on."""

    state: AgentState
    max_iterations: int
    retries_left: int
    deadline: float | None
    should_stop: Callable[[], bool] | None
    on_event: Callable[[Event], None] | None
    opts: dict[str, Any]
    iteration: int = 0
    last_action: CallSkillAction | FinalAnswerAction | None = None
    generation: int = 0
    in_skill: tuple[str, float | None, float, list[str]] | None = None
    """While a skill runs: (name, timeout or None, overrun instant or inf, available skills)."""
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def append(self, event: Event, generation: int) -> None:
        """Append and announce an event, unless this thread's turn at the run has passed."""
        with self.lock:
            if generation != self.generation:
                raise Superseded
            self.state.stream.append(event)
            if self.on_event is not None:
                self.on_event(event)

    def enter_skill(self, name: str, timeout: float | None, available: list[str]) -> None:
        overrun = math.inf if timeout is None else time.monotonic() + timeout
        self.in_skill = (name, timeout, overrun, available)

    def interruption(self) -> str | None:
        """Why the run must stop now (``cancelled`` or ``deadline``), or None."""
        if self.should_stop is not None and self.should_stop():
            return "cancelled"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return "deadline"
        return None

    def leave_skill(self, generation: int) -> None:
        with self.lock:
            if generation == self.generation:
                self.in_skill = None


class Supervisor:
    """An agent's run threads, and the skills whose abandoned calls have not returned yet."""

    def __init__(self) -> None:
        self._pool = WorkerPool()
        self._hung: dict[str, threading.Thread] = {}
        # Idle run threads end with their agent, not at interpreter exit.
        self._finalizer = weakref.finalize(self, self._pool.close)

    def check_free(self, name: str) -> None:
        """Raise SkillStillRunning while an earlier call of skill ``name`` is still stuck."""
        stuck = self._hung.get(name)
        if stuck is None:
            return
        if stuck.is_alive():
            raise SkillStillRunning(
                f"skill {name!r} is still running from an earlier call that hung"
            )
        self._hung.pop(name, None)

    def close(self) -> None:
        """Stop the idle run threads; later runs start new ones."""
        self._pool.close()

    def run(self, record: RunRecord, loop: Callable[[RunRecord, int], None]) -> None:
        """Run ``loop(record, generation)`` on a pooled thread, replacing it when a skill hangs."""
        supervise(record, loop, self._pool, self._mark_hung)

    def _mark_hung(self, name: str, thread: threading.Thread) -> None:
        self._hung[name] = thread
        log.warning("skill %s was still running at its timeout, deadline or cancel; its thread "
                    "is abandoned", name)


def supervise(
    record: RunRecord,
    loop: Callable[[RunRecord, int], None],
    pool: WorkerPool,
    mark_hung: Callable[[str, threading.Thread], None],
) -> None:
    """Run ``loop(record, generation)`` on a pooled thread, replacing it when a skill hangs."""
    worker = pool.take()
    worker.start(loop, record, 0)
    try:
        while not worker.wait(POLL_S):
            overrun = record.in_skill
            if overrun is None:
                continue
            # A skill is running: its timeout, the run's deadline and cancel all reach it, the
            # last two whether or not the skill has a timeout of its own.
            reason = record.interruption()
            if reason is None and time.monotonic() < overrun[2]:
                continue
            with record.lock:
                if record.in_skill is not overrun:
                    continue  # the skill returned while we looked
                record.generation += 1
                record.in_skill = None
                generation = record.generation
            name, timeout, _, available = overrun
            mark_hung(name, worker.thread)
            worker.retire()
            if reason is not None:
                # The run is over: it ends interrupted, and no thread carries it on.
                record.append(InterruptedObservation(reason=reason), generation)
                return
            record.append(
                ToolErrorObservation(
                    skill_name=name,
                    error=f"skill {name!r} ran past its {timeout or 0:g} s timeout and was "
                    "abandoned",
                    available_skills=available,
                ),
                generation,
            )
            worker = pool.take()
            worker.start(loop, record, generation)
    except BaseException:
        # The caller was interrupted (Ctrl-C): stop the loop at its next event, then re-raise.
        with record.lock:
            record.generation += 1
        worker.retire()
        raise
    error = worker.error
    pool.give_back(worker)
    if error is not None:
        raise error
