"""The serving loop: one ROUTER socket, a bounded queue, one run at a time on the agent's thread.

The loop owns the socket and never waits on the model, so ``status``, ``cancel`` and ``busy`` are
answered at once while a run goes on. Every request gets exactly one final reply.

The :class:`Server` owns its parts, each with its own state: the :class:`~.lifecycle.Lifecycle`, the
:class:`~.replies.Replies`, the :class:`~.runs.queue.RunQueue`, the
:class:`~.runs.jobs.ModelLoader`, the :class:`~.handlers.RequestHandler`, the
:class:`~.status.StatusReport` and the :class:`~.runs.shutdown.Shutdown`. It holds the loop, and the
runs' way from the queue to the run thread and back (watching the run's skills).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import queue
import time
from collections.abc import Callable
from typing import Any

import zmq

from edge_agentd.agent.loop import Agent
from edge_agentd.agent.protocol import ModelHandle, full_handle
from edge_agentd.agent.registry import Registry
from edge_agentd.agent.supervision import POLL_S, RunTicket
from edge_agentd.agent.workflow import Soul, Workflow
from edge_agentd.protocol.wire import ErrorCode
from edge_agentd.service.config.settings import Settings
from edge_agentd.service.config.strategy import guidance_for
from edge_agentd.service.handlers import MAX_FRAMES_PER_WAKE, RequestHandler
from edge_agentd.service.journal.journal import Journal, LoopCall
from edge_agentd.service.lifecycle import Lifecycle
from edge_agentd.service.replies import Replies
from edge_agentd.service.router import RouterSocket, WakeUpPipe
from edge_agentd.service.runs.jobs import (
    Finished,
    Job,
    Loaded,
    LoadFailed,
    Message,
    ModelLoader,
    Send,
    start_job,
)
from edge_agentd.service.runs.queue import RunQueue
from edge_agentd.service.shutdown import Shutdown
from edge_agentd.service.status import StatusReport
from edge_agentd.service.systemd import Notifier
from edge_agentd.service.threads.daemonthread import DaemonThread, crashes
from edge_agentd.service.triggerops import TriggerOps
from edge_agentd.service.triggers.firing import Firing, TriggerMemory

log = logging.getLogger(__name__)

EXTEND_STEP_S = 30.0
"""While the model loads, systemd's start timeout is pushed this far ahead, again and again."""


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
    mqtt_status: Callable[[], dict[str, Any]] | None = None
    """The MQTT bridge's state for ``status`` (any thread may call it)."""
    trigger_memory: TriggerMemory | None = None
    """Where the triggers' firings outlive a restart (the run journal); None forgets them."""


class Server:
    """Binds the endpoints, then :meth:`serve` answers until :meth:`stop` (any thread, signals).

    Everything but :meth:`stop` (and :meth:`status`, read by tests) runs on the loop's thread.
    """

    def __init__(self, settings: Settings, options: ServerOptions) -> None:
        self.settings = settings
        self.options = options
        self.limits = settings.daemon
        self.bound: list[str] = []
        self.lifecycle = Lifecycle()
        self.runs = RunQueue(self.limits.queue_limit)
        self._router = RouterSocket(self.limits.max_request_bytes, self.limits.max_connections)
        self._wakeup = WakeUpPipe()
        self.replies = Replies(self._router)
        self._outbox: queue.SimpleQueue[Message | Firing | LoopCall] = queue.SimpleQueue()
        self.journal = Journal(
            settings.journal,
            post=self._post,
            send=self.replies.send_packed,
            endpoint=options.endpoints[0] if options.endpoints else None,
        )
        self.triggers = TriggerOps(
            settings,
            options,
            post=self._post,
            router=self._router,
            replies=self.replies,
            runs=self.runs,
            journal=self.journal,
        )
        self.requests = RequestHandler(
            router=self._router,
            replies=self.replies,
            runs=self.runs,
            lifecycle=self.lifecycle,
            limits=self.limits,
            registry=options.registry,
            workflows=options.workflows,
            status=self.status_reply,
            journal=self.journal,
            more_ops={"triggers": self.triggers.triggers, "watch": self.triggers.watch},
            cancel_other=self.triggers.cancel_watch,
        )
        self._loader = ModelLoader(self._load_agent, self._post)
        self._agent: Agent | None = None
        self._ticket: RunTicket | None = None
        """The run on the agent's thread, from its start until its reply, or past shutdown's
        bound while it has not returned."""
        self.counts: collections.Counter[str] = collections.Counter()
        """``runs_finished`` and ``outcome_<outcome>``."""
        self.report = StatusReport(
            lifecycle=self.lifecycle,
            runs=self.runs,
            limits=self.limits,
            counters=lambda: (
                self.requests.counts,
                self.replies.counts,
                self.counts,
                self._router.connections.counts,
            ),
            description=self._describe,
            tail=lambda: {
                "mqtt": self.options.mqtt_status() if self.options.mqtt_status else None,
                "journal": self.journal.status(),
                "triggers": self.triggers.status(),
                "crashed_threads": crashes(self._threads()),
            },
        )
        self.report.model_spec = options.model_spec
        self.shutdown = Shutdown(
            self.lifecycle, self.runs, self.limits, options.notifier, end_run=self._end_run,
            stop_sources=lambda: self.triggers.close("the daemon is shutting down"),
        )  # fmt: skip

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
        self.journal.close()

    def stop(self) -> None:
        """Begin a graceful shutdown. Safe from any thread and from a signal handler."""
        self.lifecycle.request_stop()
        self._wakeup.wake()

    @property
    def exit_code(self) -> int:
        return self.lifecycle.exit_code

    @property
    def worker_alive(self) -> bool:
        """True while the model is still loading, or a run has not returned (one that overran
        the shutdown bound)."""
        ticket = self._ticket
        return self._loader.is_alive() or (ticket is not None and not ticket.done)

    # -- the loop -----------------------------------------------------------------------------

    def serve(self) -> int:
        """Answer requests until stopped; returns the process exit code."""
        notifier = self.options.notifier
        lifecycle = self.lifecycle
        poller = zmq.Poller()
        poller.register(self._router.socket, zmq.POLLIN)
        wakeup = self._wakeup.fileno()
        poller.register(wakeup, zmq.POLLIN)
        connections = self._router.connections
        poller.register(connections.socket, zmq.POLLIN)
        watchdog = notifier.watchdog_interval_s
        next_watchdog = time.monotonic()
        next_extend = time.monotonic()
        notifier.status(f"loading model {self.options.model_spec}")
        self._loader.start()
        self.triggers.runner.start()
        try:
            while True:
                now = time.monotonic()
                if watchdog is not None and now >= next_watchdog:
                    notifier.watchdog()
                    next_watchdog = now + watchdog
                if (
                    lifecycle.phase == "loading"
                    and now >= next_extend
                    and now - lifecycle.started < self.settings.model.load_timeout_s
                ):
                    notifier.extend_timeout(EXTEND_STEP_S)
                    next_extend = now + EXTEND_STEP_S / 3
                if lifecycle.take_hangups():
                    log.warning("SIGHUP ignored: the config is read at start; restart to apply it")
                if lifecycle.stop_requested and not lifecycle.stopping:
                    self.shutdown.begin(now)
                self._expire_queued(now)
                self._dispatch()
                if self.shutdown.finished(now):
                    break
                wait = self._next_wait(now, next_watchdog if watchdog else None, next_extend)
                for item, _ in poller.poll(round(wait * 1000)):
                    if item is self._router.socket:
                        self.requests.read()
                    elif item == wakeup:  # the connections' fd is read in drain()
                        self._wakeup.drain()
                self._read_outbox()
                if self._ticket is not None:
                    self._ticket.check()  # never raises: a failure ends the run with an error
                # Every pass, not only when the monitor is readable: sends read its events too
                # (to check a run's connection), and the cap must follow them.
                connections.drain(self.runs.owners())
        finally:
            self.triggers.runner.stop()
            self._loader.thread.join(1.0)
            if self._agent is not None:
                self._agent.close()
            lifecycle.move("stopped")
            notifier.status("stopped")
            self.close()
        return lifecycle.exit_code

    def _next_wait(self, now: float, next_watchdog: float | None, next_extend: float) -> float:
        moments = [now + 1.0]
        if next_watchdog is not None:
            moments.append(next_watchdog)
        if self.lifecycle.phase == "loading":
            moments.append(next_extend)
        queued_deadline = self.runs.next_deadline()
        if queued_deadline is not None:
            moments.append(queued_deadline)
        if self.lifecycle.stopping:
            moments.append(now + 0.05)
        if self._ticket is not None and not self._ticket.done:
            moments.append(now + POLL_S)  # the run's skills are watched from here
        return max(0.0, min(moments) - now)

    # -- status -------------------------------------------------------------------------------

    def status_reply(
        self, request_id: str | None, envelope: list[bytes] | None = None
    ) -> dict[str, Any]:
        """The ``status`` result (:class:`~.status.StatusReport`)."""
        return self.report.reply(request_id, envelope)

    def status(self) -> dict[str, Any]:
        """The fields of a ``status`` result, as a client reads them."""
        return self.report.fields()

    def _threads(self) -> list[DaemonThread]:
        watcher = self._router.connections.watch.thread
        return [self._loader.thread, self.journal.thread, watcher, self.triggers.runner.thread]

    def _describe(self) -> dict[str, Any]:
        return {
            "endpoints": list(self.bound),
            "workflows": sorted(self.options.workflows),
            "skills": len(self.options.registry),
            "skill_problems": [
                {"source": problem["source"], "error": problem["error"]}
                for problem in self.options.skill_problems
            ],
        }

    def _status_line(self) -> str:
        answered = self.counts["runs_finished"]
        return f"{self.report.state()}; {len(self.runs)} queued; {answered} runs answered"

    # -- runs: from the queue to a run thread and back ----------------------------------------

    def _expire_queued(self, now: float) -> None:
        for job in self.runs.expired(now):
            self._end_run(job, "deadline", "the deadline passed while the run waited in the queue")

    def _dispatch(self) -> None:
        agent = self._agent
        if self.lifecycle.phase != "ready" or agent is None:
            return
        job = self.runs.start_next()
        if job is None:
            return
        self.journal.started(job.request_id)
        try:
            self._ticket = start_job(agent, job, self._post)
        except Exception:
            log.exception("run %s could not start", job.request_id)
            self._post(Finished(job, None, None, "the run could not start"))

    def _post(self, message: Message | Firing | LoopCall) -> None:
        """The run thread's only way to the loop."""
        self._outbox.put(message)
        self._wakeup.wake()

    def _load_agent(self) -> Agent:
        """Runs on the loading thread."""
        model = self.options.load_model()
        # A bare model (only ``generate``) has no ``info``: read it through the full protocol.
        guidance = guidance_for(self.settings.model.strategy, full_handle(model))
        agent = Agent(model, self.options.registry, soul=self.options.soul, guidance=guidance)
        log.info("model strategy: %s", "guided" if guidance else "plain")
        if self.settings.model.warm_up:
            agent.handle.warm_up(agent.preamble())
        return agent

    def _read_outbox(self) -> None:
        while True:
            try:
                message = self._outbox.get_nowait()
            except queue.Empty:
                return
            match message:
                case Send(job, payload):
                    self.replies.send_packed(job.envelope, payload, job.connection)
                case Finished():
                    self._finish(message)
                case Loaded(agent):
                    self._loaded(agent)
                case LoadFailed(error, config):
                    self._load_failed(error, config=config)
                case Firing():
                    self.triggers.queue(message, stopping=self.lifecycle.stopping)
                case _:
                    message()  # the journal's answer to a request, on this thread

    def _loaded(self, agent: Agent) -> None:
        self._agent = agent
        self.report.model = agent.handle
        if self.lifecycle.stopping:
            return
        self.lifecycle.move("ready")
        log.info("model %s ready; answering on %s", self.options.model_spec, ", ".join(self.bound))
        self.options.notifier.ready(self._status_line())

    def _load_failed(self, error: str, *, config: bool = False) -> None:
        log.error("cannot serve: the model failed to load: %s", error)
        # 78 (EX_CONFIG) stops systemd's restarts (RestartPreventExitStatus=78): the same model
        # would fail again.
        self.lifecycle.exit_code = 78 if config else 1
        self.options.notifier.status(f"model failed to load: {error}")
        for job in self.runs.drain():
            self._end_run(job, "internal", f"the model failed to load: {error}")
        self.lifecycle.request_stop()

    def _finish(self, message: Finished) -> None:
        job = message.job
        if job is not self.runs.running:
            return  # already answered `shutting_down` when it overran the shutdown bound
        self.runs.finished(job)
        self._ticket = None
        if message.payload is None:
            self._end_run(job, "internal", f"the run failed inside the daemon: {message.error}")
        else:
            self.counts["runs_finished"] += 1
            log.info(
                "run %s: %s after %.0f ms in queue, %.0f ms running",
                job.request_id,
                message.outcome,
                ((job.started or job.received) - job.received) * 1000,
                (time.monotonic() - (job.started or job.received)) * 1000,
            )
            self.counts[f"outcome_{message.outcome}"] += 1
            self.journal.finished(
                job.request_id, message.payload, outcome=message.outcome, answer=message.answer
            )
            if job.trigger is None:
                self.replies.send_packed(job.envelope, message.payload, job.connection)
            else:
                self.triggers.finished(message)  # its trigger and the watches hear it
        if not self.lifecycle.stopping:
            self.options.notifier.status(self._status_line())

    def _end_run(self, job: Job, code: ErrorCode, message: str) -> None:
        """Answer a run that ends without a result with an error; the journal keeps it so."""
        self.journal.ended(job.request_id, code, message)
        if job.trigger is not None:
            self.triggers.ended(job, code, message)  # no client: its trigger hears it
            return
        self.replies.fail(job.envelope, job.request_id, code, message, connection=job.connection)


__all__ = ["MAX_FRAMES_PER_WAKE", "Server", "ServerOptions"]
