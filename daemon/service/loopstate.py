"""What every part of the serving loop shares: its options, its state, how it replies, its status.

:class:`LoopState` is the base of :class:`edge_agent.service.server.Server`; the request
handlers (:mod:`~.handlers`) and the run bookkeeping (:mod:`~.runs`) build on it.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from edge_agent.agent.loop import Agent
from edge_agent.agent.protocol import ModelHandle
from edge_agent.agent.registry import Registry
from edge_agent.agent.workflow import Soul, Workflow
from edge_agent.service.assembly import model_info
from edge_agent.service.config import Settings
from edge_agent.service.reports import counter_report
from edge_agent.service.router import RouterSocket, WakeUpPipe
from edge_agent.service.runqueue import RunQueue
from edge_agent.service.systemd import Notifier
from edge_agent.service.worker import Message, RunWorker
from edge_agent.wire import PROTOCOL_VERSION, ErrorCode, encode, error_reply

# The serving loop's log lines keep the logger name they had before the loop was split up.
log = logging.getLogger("edge_agent.service.server")


@dataclasses.dataclass
class ServerOptions:
    """What the serving loop needs besides the settings."""

    endpoints: list[str]
    load_model: Callable[[], ModelHandle]
    model_spec: str
    registry: Registry
    soul: Soul | None = None
    workflows: dict[str, Workflow] = dataclasses.field(default_factory=dict)
    skill_problems: list[dict[str, str]] = dataclasses.field(default_factory=list)
    notifier: Notifier = dataclasses.field(default_factory=Notifier)


class LoopState:
    """The serving loop's state, owned by the loop's thread (``stop`` and ``_post`` excepted)."""

    def __init__(self, settings: Settings, options: ServerOptions) -> None:
        self.settings = settings
        self.options = options
        self.limits = settings.daemon
        self.state = "loading"
        self.started = time.monotonic()
        self.exit_code = 0
        self.bound: list[str] = []
        self.counters: collections.Counter[str] = collections.Counter()
        self._model: ModelHandle | None = None
        self._runs = RunQueue(self.limits.queue_limit)
        self._outbox: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._stop_started: float | None = None
        self._interrupted_at: float | None = None
        self._wakeup = WakeUpPipe()
        self._router = RouterSocket(self.limits.max_request_bytes)
        self._worker = RunWorker(self._load_agent, self._post)

    # -- the run thread's side ----------------------------------------------------------------

    def _post(self, message: Message) -> None:
        self._outbox.put(message)
        self._wakeup.wake()

    def _load_agent(self) -> Agent:
        model = self.options.load_model()
        agent = Agent(model, self.options.registry, soul=self.options.soul)
        if self.settings.model.warm_up:
            agent.handle.warm_up(agent.preamble())
        return agent

    # -- replies ------------------------------------------------------------------------------

    def _fail(
        self, envelope: list[bytes], request_id: str | None, code: ErrorCode, message: str
    ) -> None:
        self.counters[f"error_{code}"] += 1
        # Hostile input must not flood the journal: client mistakes are debug, the rest info.
        level = (
            logging.DEBUG
            if code in ("bad_request", "too_large", "unsupported_version")
            else (logging.INFO)
        )
        log.log(level, "request %s: %s: %s", request_id, code, message)
        self._reply(envelope, error_reply(request_id, code, message))

    def _reply(self, envelope: list[bytes], reply: dict[str, Any]) -> None:
        self._send(envelope, encode(reply))

    def _send(self, envelope: list[bytes], payload: bytes) -> None:
        if not self._router.send(envelope, payload):
            self.counters["replies_dropped"] += 1

    # -- status -------------------------------------------------------------------------------

    def _status_line(self) -> str:
        return (
            f"{self.state}; {len(self._runs)} queued; "
            f"{self.counters['runs_finished']} runs answered"
        )

    def status(self) -> dict[str, Any]:
        running = self._runs.running
        return {
            "state": self.state,
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self.started, 3),
            "queue_depth": len(self._runs),
            "queue_limit": self.limits.queue_limit,
            "running": running.request_id if running else None,
            "model": model_info(self._model, self.options.model_spec),
            "endpoints": list(self.bound),
            "workflows": sorted(self.options.workflows),
            "skills": len(self.options.registry),
            "skill_problems": list(self.options.skill_problems),
            # One C-level copy of the counters: tests read the status from another thread.
            "counters": counter_report(dict(self.counters)),
        }


__all__ = ["LoopState", "ServerOptions"]
