"""A graceful shutdown: queued runs answered at once, the running one given its grace, then
interrupted, then answered ``shutting_down`` if it still has not returned."""

from __future__ import annotations

import logging
from collections.abc import Callable

from edge_agentd.protocol.wire import ErrorCode
from edge_agentd.service.config.settings import DaemonSettings
from edge_agentd.service.lifecycle import Lifecycle
from edge_agentd.service.runs.jobs import Job
from edge_agentd.service.runs.queue import RunQueue
from edge_agentd.service.systemd import Notifier

EndRun = Callable[[Job, ErrorCode, str], None]
"""Answer a run that ends without a result with that error (the journal keeps it so)."""

log = logging.getLogger(__name__)

INTERRUPT_WAIT_S = 5.0
"""After shutdown interrupts the run in flight, how long it may take to return."""


class Shutdown:
    """The serving loop's way out; only the loop's thread uses it."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        runs: RunQueue,
        limits: DaemonSettings,
        notifier: Notifier,
        *,
        end_run: EndRun,
        stop_sources: Callable[[], None] = lambda: None,
    ) -> None:
        self._lifecycle = lifecycle
        self._runs = runs
        self._end_run = end_run
        self._limits = limits
        self._notifier = notifier
        self._stop_sources = stop_sources
        """Stops what queues runs without a client (the triggers) before the queue is drained."""

    def begin(self, now: float) -> None:
        self._lifecycle.begin_stopping(now)
        running = self._runs.running
        log.info(
            "shutting down: %d queued, %s running",
            len(self._runs),
            running.request_id if running else "none",
        )
        self._notifier.stopping()
        self._stop_sources()
        for job in self._runs.drain():
            self._end_run(
                job, "shutting_down", "the daemon is shutting down; the run did not start"
            )

    def finished(self, now: float) -> bool:
        """Whether the loop may end: shutdown began and no run is left to wait for."""
        lifecycle = self._lifecycle
        if lifecycle.stopping_since is None:
            return False
        running = self._runs.running
        if running is None:
            return True
        if lifecycle.interrupted_at is None and (
            now - lifecycle.stopping_since >= self._limits.shutdown_grace_s
        ):
            lifecycle.interrupted_at = now
            running.cancelled.set()
        interrupted_at = lifecycle.interrupted_at
        if interrupted_at is not None and now - interrupted_at >= INTERRUPT_WAIT_S:
            self._runs.finished(running)
            self._end_run(running, "shutting_down", "the daemon shut down before the run returned")
            return True
        return False


__all__ = ["INTERRUPT_WAIT_S", "Shutdown"]
