"""The serving loop: one ROUTER socket, a bounded queue, and one worker thread that runs the agent.

The loop owns the socket and never waits on the model, so ``status``, ``cancel`` and ``busy`` are
answered at once while a run goes on. Every request gets exactly one final reply.
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

import zmq

from edge_agent.agent import Agent
from edge_agent.bootstrap import model_info
from edge_agent.config import Settings
from edge_agent.model.protocol import ModelHandle
from edge_agent.registry import Registry
from edge_agent.reports import counter_report, skill_entries
from edge_agent.router import RouterSocket, WakeUpPipe, split_frames
from edge_agent.runqueue import RunQueue, job_for
from edge_agent.systemd import Notifier
from edge_agent.wire import (
    PROTOCOL_VERSION,
    CancelRequest,
    ErrorCode,
    RunRequest,
    SkillsRequest,
    StatusRequest,
    WireError,
    accepted_reply,
    decode_request,
    encode,
    error_reply,
    result_reply,
)
from edge_agent.worker import (
    Finished,
    Loaded,
    LoadFailed,
    Message,
    RunWorker,
    Send,
    interrupted_result,
)
from edge_agent.workflow import Soul, Workflow

log = logging.getLogger(__name__)

EXTEND_STEP_S = 30.0
"""While the model loads, systemd's start timeout is pushed this far ahead, again and again."""
INTERRUPT_WAIT_S = 5.0
"""After shutdown interrupts the run in flight, how long it may take to return."""
MAX_FRAMES_PER_WAKE = 256


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


class Server:
    """Binds the endpoints, then :meth:`serve` answers until :meth:`stop` (any thread, signals)."""

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

    def _post(self, message: Message) -> None:
        self._outbox.put(message)
        self._wakeup.wake()

    def _load_agent(self) -> Agent:
        model = self.options.load_model()
        agent = Agent(model, self.options.registry, soul=self.options.soul)
        warm_up = getattr(model, "warm_up", None)
        if self.settings.model.warm_up and callable(warm_up):
            warm_up(agent.preamble())
        return agent

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

    # -- requests -----------------------------------------------------------------------------

    def _read_requests(self) -> None:
        for _ in range(MAX_FRAMES_PER_WAKE):
            frames = self._router.receive()
            if frames is None:
                return
            self.counters["frames"] += 1
            try:
                self._handle(frames)
            except Exception:
                log.exception("request handling failed")
                envelope = split_frames(frames)[0]
                self._reply(envelope, error_reply(None, "internal", "the daemon hit a bug"))

    def _handle(self, frames: list[bytes]) -> None:
        envelope, payloads, req_shape = split_frames(frames)
        if len(payloads) != 1:
            self._fail(
                envelope,
                None,
                "bad_request",
                f"expected one msgpack frame after the envelope, got {len(payloads)}",
            )
            return
        try:
            request = decode_request(
                payloads[0],
                max_bytes=self.limits.max_request_bytes,
                max_query_chars=self.limits.max_query_chars,
            )
        except WireError as exc:
            self._fail(envelope, exc.request_id, exc.code, exc.message)
            return
        self.counters[f"op_{request.op}"] += 1
        if isinstance(request, StatusRequest):
            self._reply(envelope, result_reply(request.id, "status", **self.status()))
        elif isinstance(request, SkillsRequest):
            self._skills(envelope, request)
        elif isinstance(request, CancelRequest):
            self._cancel(envelope, request)
        else:
            self._accept(envelope, request, stream=request.stream and not req_shape)

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

    def _workflow(self, name: str | None) -> Workflow | None:
        if name is None:
            return None
        workflow = self.options.workflows.get(name)
        if workflow is None:
            known = ", ".join(sorted(self.options.workflows)) or "none configured"
            raise WireError("bad_request", f"there is no workflow named {name!r} (known: {known})")
        return workflow

    def _skills(self, envelope: list[bytes], request: SkillsRequest) -> None:
        try:
            workflow = self._workflow(request.workflow)
        except WireError as exc:
            self._fail(envelope, request.id, exc.code, exc.message)
            return
        allowed = workflow.allowed_skills if workflow else None
        skills = skill_entries(self.options.registry, allowed)
        self._reply(envelope, result_reply(request.id, "skills", skills=skills))

    def _accept(self, envelope: list[bytes], request: RunRequest, *, stream: bool) -> None:
        if self._stop_started is not None:
            self._fail(envelope, request.id, "shutting_down", "the daemon is shutting down")
            return
        if self._runs.holds(request.id):
            self._fail(
                envelope,
                request.id,
                "bad_request",
                f"a run with id {request.id!r} is already queued or running",
            )
            return
        if self._runs.full:
            self._fail(
                envelope,
                request.id,
                "busy",
                f"{len(self._runs)} runs are already waiting; try again later",
            )
            return
        try:
            workflow = self._workflow(request.workflow)
        except WireError as exc:
            self._fail(envelope, request.id, exc.code, exc.message)
            return
        job = job_for(request, envelope, workflow, self.limits, stream=stream)
        position = self._runs.add(job)
        self.counters["runs_accepted"] += 1
        if stream:
            self._reply(envelope, accepted_reply(job.request_id, position))

    def _cancel(self, envelope: list[bytes], request: CancelRequest) -> None:
        found: str | None = None
        job = self._runs.remove_waiting(request.target)
        running = self._runs.running
        if job is not None:
            found = "queued"
            job.cancelled.set()
            self.counters["runs_cancelled"] += 1
            self._send(job.envelope, interrupted_result(job, "cancelled"))
        elif running is not None and running.request_id == request.target:
            found = "running"
            running.cancelled.set()
            self.counters["runs_cancelled"] += 1
        self._reply(
            envelope,
            result_reply(
                request.id, "cancel", target=request.target, cancelled=found is not None, was=found
            ),
        )

    # -- runs ---------------------------------------------------------------------------------

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
                self._model = message.agent.model
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


__all__ = ["Server", "ServerOptions"]
