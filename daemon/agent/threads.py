"""Reusable threads for agent runs, so a run whose skill hangs can be carried on by a fresh one.

A run's loop executes on a pooled thread while the caller of ``Agent.run`` waits and watches the
skill deadlines. Skills then run inline, at no cost, and only a run whose skill overruns pays for
a thread switch. The hand-off is a pair of locks rather than a queue and an event.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_MAX_IDLE = 4


class Worker:
    """A thread that runs one function at a time and can be abandoned while it is stuck."""

    def __init__(self) -> None:
        self._posted = threading.Lock()
        self._posted.acquire()
        self._finished = threading.Lock()
        self._finished.acquire()
        self._job: tuple[Callable[..., Any], tuple[Any, ...]] | None = None
        self.error: BaseException | None = None
        self.retired = False
        self.thread = threading.Thread(target=self._serve, name="edge-agent-run-loop", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            self._posted.acquire()
            job = self._job
            if job is None:
                return
            function, args = job
            try:
                function(*args)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                self.error = exc
            self._job = None
            self._finished.release()
            if self.retired:
                return

    def start(self, function: Callable[..., Any], *args: Any) -> None:
        self.error = None
        self._job = (function, args)
        self._posted.release()

    def wait(self, timeout: float) -> bool:
        """True once the function has returned; False if it is still running after ``timeout``."""
        return self._finished.acquire(timeout=timeout)

    def retire(self) -> None:
        """Let the thread end after its current job, or now if it has none."""
        self.retired = True
        if self._job is None:
            self._posted.release()


class WorkerPool:
    """Idle workers kept for the next run; a retired (stuck) worker never comes back."""

    def __init__(self) -> None:
        self._idle: list[Worker] = []

    def take(self) -> Worker:
        try:
            return self._idle.pop()
        except IndexError:
            return Worker()

    def give_back(self, worker: Worker) -> None:
        if worker.retired or len(self._idle) >= _MAX_IDLE:
            worker.retire()
        else:
            self._idle.append(worker)

    def close(self) -> None:
        while self._idle:
            self._idle.pop().retire()
