"""Skill timeouts without a thread switch per call.

A run's loop executes on a pooled thread and calls skills inline. Whoever started the run
watches it (the caller of ``Agent.run``, or the daemon's serving loop through ``Agent.start``):
when a skill runs past its timeout, the stuck thread is abandoned, a ToolErrorObservation saying
so is appended, and a fresh thread carries the run on from its record. The record holds every
counter of the loop, so nothing is lost in the hand-over. When the run's deadline passes or it is
cancelled while any skill runs, with a timeout or without, the skill's thread is abandoned the
same way and the run ends with an InterruptedObservation.
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
from edge_agent.agent.threads import Worker, WorkerPool

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
    """A registry's run threads, and its skills whose abandoned calls have not returned yet."""

    def __init__(self) -> None:
        self._pool = WorkerPool()
        self._hung: dict[str, threading.Thread] = {}
        # Idle run threads end with their registry, not at interpreter exit.
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

    def start(
        self,
        record: RunRecord,
        loop: Callable[[RunRecord, int], None],
        on_done: Callable[[BaseException | None], None] | None = None,
    ) -> RunTicket:
        """Start ``loop(record, 0)`` on a pooled thread; see :class:`RunTicket`."""
        ticket = RunTicket(record, loop, self._pool, self._mark_hung, on_done)
        ticket.begin()
        return ticket

    def run(self, record: RunRecord, loop: Callable[[RunRecord, int], None]) -> None:
        """Run ``loop(record, generation)`` on a pooled thread, replacing it when a skill hangs,
        and return when the run is over (re-raising what escaped the loop)."""
        ticket = self.start(record, loop)
        try:
            while not ticket.wait(POLL_S):
                ticket.check()
        except BaseException:
            # The caller was interrupted (Ctrl-C): stop the loop at its next event, then re-raise.
            ticket.abandon()
            raise
        if ticket.error is not None:
            raise ticket.error

    def _mark_hung(self, name: str, thread: threading.Thread) -> None:
        self._hung[name] = thread
        log.warning(
            "skill %s was still running at its timeout, deadline or cancel; its thread "
            "is abandoned",
            name,
        )


class RunTicket:
    """One run on a pooled thread, and the watch over its skills.

    Whoever started it calls :meth:`check` every :data:`POLL_S` or so until it is done: the
    blocking ``Agent.run`` from its own thread, the daemon from its serving loop (so a run
    costs the daemon no thread of its own to wait in). ``on_done(error)`` is called once, on
    the thread that ends the run, after the pooled thread has been handed back.
    """

    def __init__(
        self,
        record: RunRecord,
        loop: Callable[[RunRecord, int], None],
        pool: WorkerPool,
        mark_hung: Callable[[str, threading.Thread], None],
        on_done: Callable[[BaseException | None], None] | None,
    ) -> None:
        self.record = record
        self.error: BaseException | None = None
        """What escaped the loop (a bug: the loop contains what skills raise), or None."""
        self._loop = loop
        self._pool = pool
        self._mark_hung = mark_hung
        self._on_done = on_done
        self._worker: Worker | None = None
        self._done = False
        self._finished = threading.Lock()
        self._finished.acquire()

    @property
    def done(self) -> bool:
        return self._done

    def begin(self) -> None:
        self._worker = self._pool.take()
        self._worker.start(self._body, self._worker, 0)

    def wait(self, timeout: float) -> bool:
        """True once the run is over; False if it is still going after ``timeout`` seconds."""
        if not self._finished.acquire(timeout=timeout):
            return False
        self._finished.release()
        return True

    def check(self) -> None:
        """Abandon a skill that overran its timeout (a fresh thread carries the run on), or
        end the run if it was cancelled or its deadline passed while a skill ran. Never raises:
        what breaks on the way (a ``should_stop`` or ``on_event`` that raises, no thread to be
        had) ends the run with that error, so the watcher itself carries on."""
        try:
            self._check()
        except BaseException as exc:  # noqa: BLE001 - handed to on_done as the run's error
            self._fail(exc)

    def _check(self) -> None:
        record = self.record
        overrun = record.in_skill
        if overrun is None or self._done:
            return
        # A skill is running: its timeout, the run's deadline and cancel all reach it, the
        # last two whether or not the skill has a timeout of its own.
        reason = record.interruption()
        if reason is None and time.monotonic() < overrun[2]:
            return
        with record.lock:
            if record.in_skill is not overrun or self._done:
                return  # the skill returned while we looked
            record.generation += 1
            record.in_skill = None
            generation = record.generation
        name, timeout, _, available = overrun
        stuck = self._worker
        if stuck is not None:
            self._mark_hung(name, stuck.thread)
            stuck.retire()
        if reason is not None:
            # The run is over: it ends interrupted, and no thread carries it on.
            record.append(InterruptedObservation(reason=reason), generation)
            if self._claim(generation):
                self._end(None)
            return
        record.append(
            ToolErrorObservation(
                skill_name=name,
                error=f"skill {name!r} ran past its {timeout or 0:g} s timeout and was abandoned",
                available_skills=available,
            ),
            generation,
        )
        self._worker = worker = self._pool.take()
        worker.start(self._body, worker, generation)

    def _fail(self, error: BaseException) -> None:
        """End the run with ``error``: no thread carries it on."""
        with self.record.lock:
            if self._done:
                return
            self.record.generation += 1
            self.record.in_skill = None
            generation = self.record.generation
        if self._worker is not None:
            self._worker.retire()
        if self._claim(generation):
            self._end(error)

    def abandon(self) -> None:
        """Stop the loop at its next event; no ``on_done`` follows."""
        with self.record.lock:
            self.record.generation += 1
            if self._done:
                return
            self._done = True
        if self._worker is not None:
            self._worker.retire()
        self._finished.release()

    def _body(self, worker: Worker, generation: int) -> None:
        error: BaseException | None = None
        try:
            self._loop(self.record, generation)
        except Superseded:
            return  # an abandoned thread whose skill returned at last
        except BaseException as exc:  # noqa: BLE001 - handed to whoever ends the run
            error = exc
        if not self._claim(generation):
            return
        # Back in the pool before the run is announced over, so the next run starts on it.
        self._pool.give_back(worker)
        self._end(error)

    def _claim(self, generation: int) -> bool:
        """Mark the run over if ``generation`` still holds it; True if this call did."""
        with self.record.lock:
            if self._done or generation != self.record.generation:
                return False
            self._done = True
            return True

    def _end(self, error: BaseException | None) -> None:
        self.error = error
        try:
            if self._on_done is not None:
                self._on_done(error)
        except BaseException:  # logged; the run is over all the same
            log.exception("a run's completion callback failed")
        finally:
            self._finished.release()
