"""What ``status`` answers: the daemon's state, its queue, its model, every part's counters and
state, and the threads that crashed.

Built on the loop's thread for a request, and on a test's thread through :meth:`fields`.
"""

from __future__ import annotations

import collections
import math
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from edge_agentd.agent.jsonvalues import MAX_REASON_CHARS, UnshowableValue, to_jsonable
from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.protocol.wire import PROTOCOL_VERSION, DaemonState
from edge_agentd.service.config.settings import DaemonSettings
from edge_agentd.service.lifecycle import Lifecycle
from edge_agentd.service.options import ServerOptions
from edge_agentd.service.runs.queue import RunQueue
from edge_agentd.service.threads.daemonthread import DaemonThread, crashes
from edge_agentd.service.wedge import Wedge

_REPLY_ENVELOPE = {"v", "id", "kind", "op"}
Section = Callable[[], Any]
"""One part's map in ``status`` (its state and counters), read when asked, from any thread."""


class StatusReport:
    """The ``status`` result of one daemon, from the parts that hold what it says.

    ``sections`` are the parts' own maps, in wire order (``mqtt`` and ``mcp`` are None until
    their part is attached); ``threads`` are the daemon's own, whose crash makes it ``degraded``.
    """

    def __init__(
        self,
        *,
        lifecycle: Lifecycle,
        runs: RunQueue,
        limits: DaemonSettings,
        wedge: Wedge,
        model_spec: str,
        counters: list[collections.Counter[str]],
        options: ServerOptions,
        bound: list[str],
        sections: dict[str, Section],
        threads: list[DaemonThread],
    ) -> None:
        self._lifecycle = lifecycle
        self._runs = runs
        self._limits = limits
        self._wedge = wedge
        self._counters = counters
        self._options = options
        self._bound = bound
        """The endpoints bound (filled in place as they are)."""
        self.sections = sections
        self.threads = threads
        self.model: ModelHandle | None = None
        """The loaded model, once it is."""
        self.model_spec = model_spec

    def reply(self, request_id: str | None, envelope: list[bytes] | None = None) -> dict[str, Any]:
        """The ``status`` result: a :class:`~edge_agentd.protocol.wire.StatusResult` map, in
        wire order.
        Asked over the socket (``envelope``), it names the running run's id only to the
        connection that started it: ids are not told to other clients, who still see that a run
        is going, where it came from, its step and its seconds (:meth:`running`).

        It is built as a plain map, not validated: every value is this process's own, and
        validating them on each ``status`` cost as much as the rest of the request's handling.
        tests/service/test_server.py validates it against the model instead.
        """
        crashed = crashes(self.threads)
        return {
            "v": PROTOCOL_VERSION,
            "id": request_id,
            "kind": "result",
            "op": "status",
            "state": self.state(crashed),  # busy, whoever's run it is
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "uptime_s": self._lifecycle.uptime_s(),
            "queue_depth": len(self._runs),
            "queue_limit": self._limits.queue_limit,
            "running": self.running(envelope),
            "model": model_info(self.model, self.model_spec),
            **self.description(),
            "counters": counter_report(self.counts()),
            **{name: section() for name, section in self.sections.items()},
            "crashed_threads": crashed,
            "wedged": self._wedge.status(),
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

    def description(self) -> dict[str, Any]:
        """What the daemon serves: its endpoints, workflows and skills, and the skills that did
        not load."""
        options = self._options
        return {
            "endpoints": list(self._bound),
            "workflows": sorted(options.workflows),
            "skills": len(options.registry),
            "skill_problems": [
                {"source": problem["source"], "error": problem["error"]}
                for problem in options.skill_problems
            ],
        }

    def fields(self) -> dict[str, Any]:
        """The fields of a ``status`` result, as a client reads them."""
        return {k: v for k, v in self.reply(None).items() if k not in _REPLY_ENVELOPE}

    def state(self, crashed: Mapping[str, str] | None = None) -> DaemonState:
        """``degraded`` while a run is wedged or one of the daemon's threads has crashed (it
        says which in ``crashed_threads``), else the lifecycle's phase, ``busy`` for a run."""
        phase = self._lifecycle.phase
        if crashed is None:
            crashed = crashes(self.threads)
        if phase in ("loading", "ready") and (self._wedge.wedged or crashed):
            return "degraded"
        return "busy" if phase == "ready" and self._runs.running is not None else phase

    def counts(self) -> dict[str, int]:
        # One C-level copy of each part's counters: tests read the status from another thread.
        merged: dict[str, int] = {}
        for part in self._counters:
            for key, value in dict(part).items():
                merged[key] = merged.get(key, 0) + value
        return merged


def counter_report(counters: Mapping[str, int]) -> dict[str, Any]:
    """The ``counters`` of a status reply (a :class:`~edge_agentd.protocol.wire.Counters` map, which
    tests/service/test_server.py checks), from the loop's flat counter names."""
    errors = {k[len("error_") :]: v for k, v in counters.items() if k.startswith("error_")}
    return {
        "requests": counters.get("frames", 0),
        "runs_accepted": counters.get("runs_accepted", 0),
        "runs_finished": counters.get("runs_finished", 0),
        "runs_cancelled": counters.get("runs_cancelled", 0),
        "replies_dropped": counters.get("replies_dropped", 0),
        "connections_accepted": counters.get("connections_accepted", 0),
        "connections_closed": counters.get("connections_closed", 0),
        "connections_over_cap": counters.get("connections_over_cap", 0),
        "connections_paused": counters.get("connections_paused", 0),
        "connections_refused_at_limit": counters.get("connections_refused_at_limit", 0),
        "connections_past_pause": counters.get("connections_past_pause", 0),
        "errors": sum(errors.values()),
        "errors_by_code": errors,
        "outcomes": {
            k[len("outcome_") :]: v for k, v in counters.items() if k.startswith("outcome_")
        },
    }


def model_info(model: ModelHandle | None, spec: str) -> dict[str, Any]:
    """The ``model`` of a status reply: its spec, and what the loaded model says of itself."""
    described: dict[str, Any] = {"spec": spec}
    if model is not None:
        info = model.info
        # Whatever the handle reports must survive msgpack: paths and the like become strings.
        # A flat map of plain values (the usual case, asked on every status) is taken as it is.
        try:
            described.update(info if _plain(info) else to_jsonable(info))
        except UnshowableValue as exc:
            described["error"] = str(exc)[:MAX_REASON_CHARS]
    return described


def _plain(info: Mapping[str, Any]) -> bool:
    for key, value in info.items():
        if type(key) is not str or not key.isascii():
            return False
        kind = type(value)
        if value is None or kind is bool:
            continue
        if kind is str:
            if not value.isascii():
                return False
        elif kind is int:
            if not -(2**63) <= value < 2**64:
                return False
        elif kind is not float or not math.isfinite(value):
            return False
    return isinstance(info, dict)


__all__ = ["Section", "StatusReport", "counter_report", "model_info"]
