"""The runs' side of the serving loop: queued deadlines, dispatch to the worker, its messages.

The worker thread posts its messages (:data:`edge_agent.service.worker.Message`) to the outbox; the
loop's thread reads them here, sends what they carry and keeps the queue and the state in step.
"""

from __future__ import annotations

import logging
import queue
import time

from edge_agent.service.loopstate import LoopState
from edge_agent.service.worker import Finished, Loaded, LoadFailed, Send

# The serving loop's log lines keep the logger name they had before the loop was split up.
log = logging.getLogger("edge_agent.service.server")


class RunLifecycle(LoopState):
    """Moves runs from the queue to the worker and answers them when the worker is done."""

    def _expire_queued(self, now: float) -> None:
        for job in self._runs.expired(now):
            self._fail(
                job.envelope,
                job.request_id,
                "deadline",
                "the deadline passed while the run waited in the queue",
            )

    def _dispatch(self) -> None:
        if self.state == "loading" or self._stop_started is not None:
            return
        job = self._runs.start_next()
        if job is not None:
            self._worker.inbox.put(job)
        self.state = "busy" if self._runs.running is not None else "ready"

    def _read_outbox(self) -> None:
        while True:
            try:
                message = self._outbox.get_nowait()
            except queue.Empty:
                return
            if isinstance(message, Send):
                self._send(message.job.envelope, message.payload)
            elif isinstance(message, Finished):
                self._finish(message)
            elif isinstance(message, Loaded):
                self._model = message.agent.handle
                if self._stop_started is not None:
                    continue
                self.state = "ready"
                log.info("model %s ready", self.options.model_spec)
                self.options.notifier.ready(self._status_line())
            elif isinstance(message, LoadFailed):
                log.error("cannot serve: the model failed to load: %s", message.error)
                self.exit_code = 1
                self.options.notifier.status(f"model failed to load: {message.error}")
                for job in self._runs.drain():
                    self._fail(
                        job.envelope,
                        job.request_id,
                        "internal",
                        f"the model failed to load: {message.error}",
                    )
                self._stop.set()

    def _finish(self, message: Finished) -> None:
        job = message.job
        if job is not self._runs.running:
            return  # already answered `shutting_down` when it overran the shutdown bound
        self._runs.running = None
        if message.payload is None:
            self._fail(
                job.envelope,
                job.request_id,
                "internal",
                f"the run failed inside the daemon: {message.error}",
            )
        else:
            self.counters["runs_finished"] += 1
            log.info(
                "run %s: %s after %.0f ms in queue, %.0f ms running",
                job.request_id,
                message.outcome,
                ((job.started or job.received) - job.received) * 1000,
                (time.monotonic() - (job.started or job.received)) * 1000,
            )
            self.counters[f"outcome_{message.outcome}"] += 1
            self._send(job.envelope, message.payload)
        if self._stop_started is None:
            self.options.notifier.status(self._status_line())


__all__ = ["RunLifecycle"]
