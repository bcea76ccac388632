"""The serving loop: one ROUTER socket, a bounded queue, and one worker thread that runs the agent.

The loop owns the socket and never waits on the model, so ``status``, ``cancel`` and ``busy`` are
answered at once while a run goes on. Every request gets exactly one final reply.
"""

from __future__ import annotations

import logging
import time

import zmq

from edge_agent.service.handlers import MAX_FRAMES_PER_WAKE, RequestHandlers
from edge_agent.service.loopstate import ServerOptions
from edge_agent.service.runs import RunLifecycle

log = logging.getLogger(__name__)

EXTEND_STEP_S = 30.0
"""While the model loads, systemd's start timeout is pushed this far ahead, again and again."""
INTERRUPT_WAIT_S = 5.0
"""After shutdown interrupts the run in flight, how long it may take to return."""


class Server(RequestHandlers, RunLifecycle):
    """Binds the endpoints, then :meth:`serve` answers until :meth:`stop` (any thread, signals).

    The state and the replies live in :class:`~edge_agent.service.loopstate.LoopState`, the request
    handlers in :mod:`~.handlers`, the run bookkeeping in :mod:`~.runs`;
    this class holds the loop, its setup and teardown, and shutdown.
    """

    # -- setup and teardown -------------------------------------------------------------------

    def bind(self) -> list[str]:
        """Claim and bind every endpoint; raises EndpointError and leaves nothing bound."""
        try:
            self.bound = self._router.bind(
                self.options.endpoints, allow_remote=self.limits.allow_remote
            )
        except BaseException:
            self.close()
            raise
        return self.bound

    def close(self) -> None:
        self._router.close()
        self._wakeup.close()
        self.options.notifier.close()

    @property
    def worker_alive(self) -> bool:
        """True while the run thread is still inside a run (one that overran the shutdown bound)."""
        return self._worker.is_alive()

    def stop(self) -> None:
        """Begin a graceful shutdown. Safe from any thread and from a signal handler."""
        self._stop.set()
        self._wakeup.wake()

    # -- the loop -----------------------------------------------------------------------------

    def serve(self) -> int:
        """Answer requests until stopped; returns the process exit code."""
        notifier = self.options.notifier
        poller = zmq.Poller()
        poller.register(self._router.socket, zmq.POLLIN)
        poller.register(self._wakeup.fileno(), zmq.POLLIN)
        watchdog = notifier.watchdog_interval_s
        next_watchdog = time.monotonic()
        next_extend = time.monotonic()
        notifier.status(f"loading model {self.options.model_spec}")
        self._worker.start()
        try:
            while True:
                now = time.monotonic()
                if watchdog is not None and now >= next_watchdog:
                    notifier.watchdog()
                    next_watchdog = now + watchdog
                if (
                    self.state == "loading"
                    and now >= next_extend
                    and now - self.started < self.settings.model.load_timeout_s
                ):
                    notifier.extend_timeout(EXTEND_STEP_S)
                    next_extend = now + EXTEND_STEP_S / 3
                if self._stop.is_set() and self._stop_started is None:
                    self._begin_shutdown()
                self._expire_queued(now)
                self._dispatch()
                if self._finished_shutdown(now):
                    break
                wait = self._next_wait(now, next_watchdog if watchdog else None, next_extend)
                for item, _ in poller.poll(round(wait * 1000)):
                    if item is self._router.socket:
                        self._read_requests()
                    else:
                        self._wakeup.drain()
                self._read_outbox()
        finally:
            self._worker.inbox.put(None)
            self._worker.join(timeout=1.0)
            notifier.status("stopped")
            self.close()
        return self.exit_code

    def _next_wait(self, now: float, next_watchdog: float | None, next_extend: float) -> float:
        moments = [now + 1.0]
        if next_watchdog is not None:
            moments.append(next_watchdog)
        if self.state == "loading":
            moments.append(next_extend)
        queued_deadline = self._runs.next_deadline()
        if queued_deadline is not None:
            moments.append(queued_deadline)
        if self._stop_started is not None:
            moments.append(now + 0.05)
        return max(0.0, min(moments) - now)

    # -- shutdown -----------------------------------------------------------------------------

    def _begin_shutdown(self) -> None:
        self._stop_started = time.monotonic()
        self.state = "stopping"
        log.info(
            "shutting down: %d queued, %s running",
            len(self._runs),
            self._runs.running.request_id if self._runs.running else "none",
        )
        self.options.notifier.stopping()
        for job in self._runs.drain():
            self._fail(
                job.envelope,
                job.request_id,
                "shutting_down",
                "the daemon is shutting down; the run did not start",
            )

    def _finished_shutdown(self, now: float) -> bool:
        if self._stop_started is None:
            return False
        running = self._runs.running
        if running is None:
            return True
        if (
            self._interrupted_at is None
            and now - self._stop_started >= self.limits.shutdown_grace_s
        ):
            self._interrupted_at = now
            running.cancelled.set()
        if self._interrupted_at is not None and now - self._interrupted_at >= INTERRUPT_WAIT_S:
            self._runs.running = None
            self._fail(
                running.envelope,
                running.request_id,
                "shutting_down",
                "the daemon shut down before the run returned",
            )
            return True
        return False


# MAX_FRAMES_PER_WAKE and ServerOptions moved out; they stay importable from here.
__all__ = ["MAX_FRAMES_PER_WAKE", "Server", "ServerOptions"]
