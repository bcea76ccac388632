"""What ``status`` answers: the daemon's state, its queue, its model and every part's counters.

Built on the loop's thread for a request, and on a test's thread through :meth:`fields`.
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.protocol.wire import PROTOCOL_VERSION, DaemonState
from edge_agentd.service.config.settings import DaemonSettings
from edge_agentd.service.lifecycle import Lifecycle
from edge_agentd.service.reports import counter_report, model_info
from edge_agentd.service.runs.queue import RunQueue
from edge_agentd.service.wedge import Wedge

_REPLY_ENVELOPE = {"v", "id", "kind", "op"}


class StatusReport:
    """The ``status`` result of one daemon, from the parts that hold what it says."""

    def __init__(
        self,
        *,
        lifecycle: Lifecycle,
        runs: RunQueue,
        limits: DaemonSettings,
        counters: Callable[[], Iterable[collections.Counter[str]]],
        description: Callable[[], dict[str, Any]],
        tail: Callable[[], dict[str, Any]],
    ) -> None:
        self._lifecycle = lifecycle
        self._runs = runs
        self._limits = limits
        self._counters = counters
        self._description = description
        self._tail = tail
        """The last fields, from parts outside the loop: ``mqtt`` (the bridge, attached after
        the loop is made, or None) and ``journal``."""
        self.model: ModelHandle | None = None
        """The loaded model, once it is."""
        self.model_spec = ""
        self.wedge: Wedge | None = None
        """Whether a run is wedged (``degraded``), once wired."""

    def reply(self, request_id: str | None, envelope: list[bytes] | None = None) -> dict[str, Any]:
        """The ``status`` result: a :class:`~edge_agentd.protocol.wire.StatusResult` map, in
        wire order.
        Asked over the socket (``envelope``), it names the running run's id only to the
        connection that started it: ids are not told to other clients, who still see that a run
        is going, where it came from, its step and its seconds (:meth:`running`).

        It is built as a plain map, not validated: every value is this process's own, and
        validating them on each ``status`` cost as much as the rest of the request's handling.
        tests/test_server.py validates it against the model instead.
        """
        described = self._description()
        return {
            "v": PROTOCOL_VERSION,
            "id": request_id,
            "kind": "result",
            "op": "status",
            "state": self.state(),  # busy, whoever's run it is
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "uptime_s": self._lifecycle.uptime_s(),
            "queue_depth": len(self._runs),
            "queue_limit": self._limits.queue_limit,
            "running": self.running(envelope),
            "model": model_info(self.model, self.model_spec),
            **described,
            "counters": counter_report(self.counts()),
            **self._tail(),
        }

    def running(self, envelope: list[bytes] | None) -> dict[str, Any] | None:
        """The run the model is busy with (a :class:`~edge_agentd.protocol.wire.RunningRun`
        map), or None. Its ``id`` only for the connection that sent it (``envelope``; a status
        built in-process, with none, is the daemon's own and gets it too)."""
        job = self._runs.running
        if job is None:
            return None
        owner = envelope is None or job.envelope[:1] == envelope[:1]
        started = job.started if job.started is not None else job.received
        return {
            "id": job.request_id if owner else None,
            "source": job.source,
            "step": min(job.steps_done + 1, job.options.max_iterations),
            "max_iterations": job.options.max_iterations,
            "seconds": round(time.monotonic() - started, 1),
        }

    def fields(self) -> dict[str, Any]:
        """The fields of a ``status`` result, as a client reads them."""
        return {k: v for k, v in self.reply(None).items() if k not in _REPLY_ENVELOPE}

    def state(self) -> DaemonState:
        phase = self._lifecycle.phase
        if phase == "ready" and self.wedge is not None and self.wedge.wedged:
            return "degraded"
        return "busy" if phase == "ready" and self._runs.running is not None else phase

    def counts(self) -> dict[str, int]:
        # One C-level copy of each part's counters: tests read the status from another thread.
        merged: dict[str, int] = {}
        for part in self._counters():
            for key, value in dict(part).items():
                merged[key] = merged.get(key, 0) + value
        return merged


__all__ = ["StatusReport"]
