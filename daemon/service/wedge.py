"""A run that never returns: said in ``status``, answered, and healed by systemd's watchdog.

The run's deadline and cancel stop the model inside its call and abandon a skill that hangs
(docs/design.md, Decision 6), so a run past its deadline ends within a moment. One still going
``wedged_after_s`` past its deadline is stuck where nothing reaches it: a C call that does not
come back, a deadlock in a skill's extension that holds the model. The serving loop is alive and
would feed the watchdog for ever while every later ask waits behind it.

So, once, the run is answered ``shutting_down`` and journaled ``interrupted`` with the reason
``wedged`` (its key let go, so a retry with the key runs it again); every queued run is answered
``shutting_down`` too, as is every run asked from then on, so no one is left without a reply; and
the loop stops feeding the watchdog, so systemd kills the daemon and starts it again
(``Restart=on-failure``). ``status`` says ``degraded``, which run and how long past its deadline.
Outside systemd nothing restarts it: ``status`` and the log say so until someone does. If the
run returns after all, its result is dropped (it was answered) and the daemon is well again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from edge_agentd.protocol.wire import ErrorCode
from edge_agentd.service.runs.jobs import Job
from edge_agentd.service.runs.queue import RunQueue
from edge_agentd.service.systemd import Notifier

log = logging.getLogger(__name__)

EndRun = Callable[..., None]
"""``Server.end_run(job, code, message, reason=...)``."""


class Wedge:
    """Watches the running run from the serving loop; only the loop's thread calls it."""

    def __init__(
        self, runs: RunQueue, bound_s: float, notifier: Notifier, *, end_run: EndRun
    ) -> None:
        self._runs = runs
        self._bound_s = bound_s
        self._notifier = notifier
        self._end_run = end_run
        self.job: Job | None = None
        """The wedged run, until it returns (if ever)."""

    @property
    def wedged(self) -> bool:
        return self.job is not None

    def check(self, now: float) -> None:
        """Each pass of the loop: find a wedged run, and answer whatever queues behind it."""
        if self.job is None:
            job = self._runs.running
            deadline = None if job is None else job.options.deadline
            if job is None or deadline is None or now - deadline < self._bound_s:
                return
            self._wedge(job, now - deadline)
        for queued in self._runs.drain():
            self._end_run(queued, *_RESTARTING)

    def returned(self, job: Job) -> bool:
        """Whether ``job`` is the wedged run, which has returned at last: the daemon is well."""
        if job is not self.job:
            return False
        self.job = None
        log.warning("the wedged run %s returned at last; its result was not sent", job.request_id)
        return True

    def status(self) -> dict[str, Any] | None:
        """``status``'s ``wedged`` field: the run, its source, seconds past its deadline."""
        job = self.job
        if job is None or job.options.deadline is None:
            return None
        return {
            "run_id": job.request_id,
            "source": job.source,
            "overdue_s": round(time.monotonic() - job.options.deadline, 1),
            "restart": "systemd's watchdog" if self._notifier.watchdog_s else "none",
        }

    def _wedge(self, job: Job, overdue_s: float) -> None:
        self.job = job
        job.cancelled.set()
        how = (
            "the watchdog is no longer fed: systemd restarts the daemon"
            if self._notifier.watchdog_s
            else "no watchdog: restart the daemon"
        )
        log.error(
            "run %s is wedged: %.0f s past its deadline its model call or skill has not "
            "returned; %s",
            job.request_id,
            overdue_s,
            how,
        )
        self._end_run(
            job,
            "shutting_down",
            f"the run did not return {overdue_s:.0f} s past its deadline (a model call or skill "
            "that never returns); the daemon restarts: ask again",
            reason="wedged",
        )
        self._notifier.status(f"degraded: run {job.request_id} wedged; {how}")


_RESTARTING: tuple[ErrorCode, str] = (
    "shutting_down",
    "the daemon restarts: the run before this one never returned; ask again",
)


__all__ = ["Wedge"]
