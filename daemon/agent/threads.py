"""Reusable threads for agent runs, so a run whose skill hangs can be carried on by a fresh one.

A run's loop executes on a pooled thread while someone watches the skill deadlines: the caller
of ``Agent.run``, or the daemon's serving loop. Skills then run inline, at no cost, and only a
run whose skill overruns pays for a thread switch. The hand-off is a lock rather than a queue
and an event.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_MAX_IDLE = 4


class Worker:
    """A thread that runs one function at a time and can be abandoned while it is stuck.

    The function must not raise (a run's body catches everything itself); it may hand this
    worker back to its pool before it returns, so the next run can start on it at once.
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


class WorkerPool:
    """Idle workers kept for the next run; a retired (stuck) worker never comes back. Agents on
    one registry share it, from any thread."""

    def __init__(self) -> None:
        self._idle: list[Worker] = []
        self._lock = threading.Lock()

    def take(self) -> Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if not worker.retired and worker.thread.is_alive():
                    return worker
        return Worker()

    def give_back(self, worker: Worker) -> None:
        with self._lock:
            if not worker.retired and len(self._idle) < _MAX_IDLE:
                self._idle.append(worker)
                return
        worker.retire()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.retire()
