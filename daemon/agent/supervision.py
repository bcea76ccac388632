"""Skill timeouts without a thread switch per call: the threads runs execute on, and the watch.

A run's loop executes on a pooled thread and calls skills inline. Whoever started the run
watches it (the caller of ``Agent.run``, or the daemon's serving loop through ``Agent.start``):
when a skill runs past its timeout, the stuck thread is abandoned, a ToolErrorObservation saying
so is appended, and a fresh thread carries the run on from its record
(:class:`~edge_agentd.agent.run.RunRecord`), so nothing is lost in the hand-over. When the run's
deadline passes or it is cancelled while any skill runs, with a timeout or without, the skill's
thread is abandoned the same way and the run ends with an InterruptedObservation.

:class:`RunThreads` owns the threads and the record of skills whose abandoned calls have not
returned yet. An Agent is handed one; by default all share :func:`shared_run_threads`, so a fresh
Agent per question starts no thread, and a skill that hung under one agent is not started again
under the next. The registry is a table of skills and owns no thread.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from edge_agentd.agent.events import AgentState, InterruptedObservation, ToolErrorObservation
from edge_agentd.agent.registry import SkillSpec
from edge_agentd.agent.run import RunRecord, SkillStillRunning, Superseded

log = logging.getLogger(__name__)

POLL_S = 0.05
"""How often the waiting caller looks for an overrun skill: the precision of skill timeouts."""
_MAX_IDLE = 4

OnDone = Callable[[AgentState, BaseException | None], None]


class RunThread:
    """A thread that runs one function at a time and can be abandoned while it is stuck.

    The function must not raise (a run's body catches everything itself); it may hand this
    thread back to its pool before it returns, so the next run can start on it at once. The
    hand-off is a lock rather than a queue and an event.
    """

    def __init__(self) -> None:
        self._posted = threading.Lock()
        self._posted.acquire()
        self._job: tuple[Callable[..., Any], tuple[Any, ...]] | None = None
        self.retired = False
        self.thread = threading.Thread(target=self._serve, name="edge-agent-run-loop", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            self._posted.acquire()
            # Taken before the call: a job posted while this one finishes is not lost.
            job, self._job = self._job, None
            if job is None:
                return
            function, args = job
            try:
                function(*args)
            except BaseException:  # logged; the thread ends and is never handed out again
                self.retired = True
                log.exception("a run thread's job failed")
                return
            if self.retired:
                return

    def start(self, function: Callable[..., Any], *args: Any) -> None:
        self._job = (function, args)
        self._posted.release()

    def retire(self) -> None:
        """Let the thread end after its current job, or now if it has none."""
        self.retired = True
        if self._job is None:
            # Wakes an idle thread to end; a busy one ends when its job returns.
            with contextlib.suppress(RuntimeError):
                self._posted.release()


class _IdleThreads:
    """Idle threads kept for the next run; a retired (stuck) one never comes back."""

    def __init__(self) -> None:
        self._idle: list[RunThread] = []
        self._lock = threading.Lock()

    def take(self) -> RunThread:
        with self._lock:
            while self._idle:
                thread = self._idle.pop()
                if not thread.retired and thread.thread.is_alive():
                    return thread
        return RunThread()

    def give_back(self, thread: RunThread) -> None:
        with self._lock:
            if not thread.retired and len(self._idle) < _MAX_IDLE:
                self._idle.append(thread)
                return
        thread.retire()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for thread in idle:
            thread.retire()


class RunThreads:
    """The threads runs execute on, and the skills whose abandoned calls have not returned yet.
    Used from any thread, by any number of agents."""

    def __init__(self) -> None:
        self._idle = _IdleThreads()
        self._hung: weakref.WeakKeyDictionary[SkillSpec, threading.Thread] = (
            weakref.WeakKeyDictionary()
        )
        # Idle threads end with their owner, not at interpreter exit.
        self._finalizer = weakref.finalize(self, self._idle.close)

    def start(
        self, record: RunRecord, loop: Callable[[int], None], on_done: OnDone | None
    ) -> RunTicket:
        """Start ``loop(0)``, turn 0 of ``record``, on a pooled thread; see :class:`RunTicket`."""
        ticket = RunTicket(record, loop, self, on_done)
        ticket.begin()
        return ticket

    def check_free(self, skill: SkillSpec) -> None:
        """Raise SkillStillRunning while an earlier call of ``skill`` is still stuck."""
        if not self._hung:
            return  # none hangs: the call of every skill but a stuck one's
        stuck = self._hung.get(skill)
        if stuck is None:
            return
        if stuck.is_alive():
            raise SkillStillRunning(
                f"skill {skill.name!r} is still running from an earlier call that hung"
            )
        self._hung.pop(skill, None)

    def abandon(self, skill: SkillSpec, thread: RunThread) -> None:
        """Give up on ``thread``, stuck in ``skill``: it ends when the skill returns, if ever."""
        self._hung[skill] = thread.thread
        thread.retire()
        log.warning(
            "skill %s was still running at its timeout, deadline or cancel; its thread "
            "is abandoned",
            skill.name,
        )

    def take(self) -> RunThread:
        return self._idle.take()

    def give_back(self, thread: RunThread) -> None:
        self._idle.give_back(thread)

    def close(self) -> None:
        """Stop the idle threads; later runs start new ones."""
        self._idle.close()


@functools.cache
def shared_run_threads() -> RunThreads:
    """The run threads every Agent uses unless it is handed others."""
    return RunThreads()


class RunTicket:
    """One run on a pooled thread, and the watch over its skills.

    Whoever started it calls :meth:`check` every :data:`POLL_S` or so until it is done: the
    blocking ``Agent.run`` from its own thread (:meth:`result`), the daemon from its serving
    loop (so a run costs the daemon no thread of its own to wait in). ``on_done(state, error)``
    is called once, on the thread that ends the run, after the pooled thread has been handed
    back.
    """

    def __init__(
        self,
        record: RunRecord,
        loop: Callable[[int], None],
        threads: RunThreads,
        on_done: OnDone | None,
    ) -> None:
        self.record = record
        self.error: BaseException | None = None
        """What escaped the loop (a bug: the loop contains what skills raise), or None."""
        self._loop = loop
        self._threads = threads
        self._on_done = on_done
        self._thread: RunThread | None = None
        self._done = False
        self._finished = threading.Lock()
        self._finished.acquire()

    @property
    def done(self) -> bool:
        return self._done

    def begin(self) -> None:
        self._thread = thread = self._threads.take()
        thread.start(self._body, thread, 0)

    def wait(self, timeout: float) -> bool:
        """True once the run is over; False if it is still going after ``timeout`` seconds."""
        if not self._finished.acquire(timeout=timeout):
            return False
        self._finished.release()
        return True

    def result(self) -> AgentState:
        """Watch the run from this thread until it is over; its state, or what escaped it."""
        try:
            while not self.wait(POLL_S):
                self.check()
        except BaseException:
            # The caller was interrupted (Ctrl-C): stop the loop at its next event, then re-raise.
            self.abandon()
            raise
        if self.error is not None:
            raise self.error
        return self.record.state

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
        if reason is None and time.monotonic() < overrun[1]:
            return
        with record.lock:
            if record.in_skill is not overrun or self._done:
                return  # the skill returned while we looked
            record.generation += 1
            record.in_skill = None
            generation = record.generation
        skill, _, available = overrun
        if self._thread is not None:
            self._threads.abandon(skill, self._thread)
        if reason is not None:
            # The run is over: it ends interrupted, and no thread carries it on.
            record.append(InterruptedObservation(reason=reason), generation)
            if self._claim(generation):
                self._end(None)
            return
        record.append(
            ToolErrorObservation(
                skill_name=skill.name,
                error=f"skill {skill.name!r} ran past its {skill.timeout_s or 0:g} s timeout "
                "and was abandoned",
                available_skills=available,
            ),
            generation,
        )
        self._thread = thread = self._threads.take()
        thread.start(self._body, thread, generation)

    def _fail(self, error: BaseException) -> None:
        """End the run with ``error``: no thread carries it on."""
        with self.record.lock:
            if self._done:
                return
            self.record.generation += 1
            self.record.in_skill = None
            generation = self.record.generation
        if self._thread is not None:
            self._thread.retire()
        if self._claim(generation):
            self._end(error)

    def abandon(self) -> None:
        """Stop the loop at its next event; no ``on_done`` follows."""
        with self.record.lock:
            self.record.generation += 1
            if self._done:
                return
            self._done = True
        if self._thread is not None:
            self._thread.retire()
        self._finished.release()

    def _body(self, thread: RunThread, generation: int) -> None:
        error: BaseException | None = None
        try:
            self._loop(generation)
        except Superseded:
            return  # an abandoned thread whose skill returned at last
        except BaseException as exc:  # noqa: BLE001 - handed to whoever ends the run
            error = exc
        if not self._claim(generation):
            return
        # Back in the pool before the run is announced over, so the next run starts on it.
        self._threads.give_back(thread)
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
                self._on_done(self.record.state, error)
        except BaseException:  # logged; the run is over all the same
            log.exception("a run's completion callback failed")
        finally:
            self._finished.release()


__all__ = ["POLL_S", "RunThread", "RunThreads", "RunTicket", "shared_run_threads"]
