"""The serving loop: one ROUTER socket, a bounded queue, one run at a time on the agent's thread.

The loop owns the socket and never waits on the model, so ``status``, ``cancel`` and ``busy`` are
answered at once while a run goes on. Every request gets exactly one final reply.

A :class:`Server` builds itself from the settings and its :class:`ServerOptions`: each part is
made here, once, handed the others it calls, and keeps its own state. The server holds the loop,
the other threads' one way to it (:meth:`Server.post` and the wake-up pipe), and the runs' way
from the queue to the run thread and back (watching the run's skills).
"""

from __future__ import annotations

import collections
import logging
import queue
import time
from collections.abc import Iterable
from typing import Any

import zmq

from edge_agentd.agent.loop import Agent
from edge_agentd.agent.supervision import POLL_S, RunTicket
from edge_agentd.protocol.wire import ErrorCode
from edge_agentd.service.config.settings import Settings
from edge_agentd.service.demomark import DemoMarks
from edge_agentd.service.handlers import MAX_FRAMES_PER_WAKE, RequestHandler
from edge_agentd.service.journal.keeper import Journal, LoopCall
from edge_agentd.service.lifecycle import Lifecycle
from edge_agentd.service.options import ServerOptions
from edge_agentd.service.replies import Replies
from edge_agentd.service.router import RouterSocket
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
from edge_agentd.service.skillcalls import SkillCalls
from edge_agentd.service.status import Section, StatusReport
from edge_agentd.service.threads.daemonthread import DaemonThread
from edge_agentd.service.threads.wakeup import WakeUp
from edge_agentd.service.triggerops import TriggerOps
from edge_agentd.service.triggers.firing import Firing
from edge_agentd.service.wedge import Wedge

log = logging.getLogger(__name__)

EXTEND_STEP_S = 30.0
"""While the model loads, systemd's start timeout is pushed this far ahead, again and again."""

Posted = Message | Firing | LoopCall
"""What another thread posts to the serving loop: a run's or the loader's message, a trigger's
firing, or a call (the journal's answer to a request) to make on the loop's thread."""


class Server:
    """Binds the endpoints, then :meth:`serve` answers until :meth:`stop` (any thread, signals).

    Everything but :meth:`stop`, :meth:`post` (and :meth:`status`, read by tests) runs on the
    loop's thread.
    """

    def __init__(self, settings: Settings, options: ServerOptions) -> None:
        self.settings = settings
        self.options = options
        self.limits = limits = settings.daemon
        self.lifecycle = Lifecycle()
        self.runs = RunQueue(limits.queue_limit)
        self.counts: collections.Counter[str] = collections.Counter()
        """``runs_finished`` and ``outcome_<outcome>``."""
        self._router = RouterSocket(limits.max_request_bytes, limits.max_connections)
        self._wakeup = WakeUp()
        self._posted: queue.SimpleQueue[Posted] = queue.SimpleQueue()
        self.replies = Replies(self._router)
        self.journal = Journal(
            settings.journal,
            post=self.post,
            send=self.replies.send_packed,
            endpoint=options.endpoints[0] if options.endpoints else None,
            demo=options.demo,
            open_now=False,  # bind() opens it, once the endpoints are its own
        )
        self.triggers = TriggerOps(
            settings, options.registry, options.workflows, memory=options.trigger_memory,
            post=self.post, router=self._router, replies=self.replies, runs=self.runs,
            journal=self.journal,
        )  # fmt: skip
        self.calls = SkillCalls(
            options.registry, self.journal, self.replies, self.post, run_holds=self.runs.holds
        )
        self._loader = ModelLoader(
            options.load_model, options.registry, options.soul, settings.model, self.post
        )
        self.wedge = Wedge(self.runs, limits.wedged_after_s, options.notifier, end_run=self.end_run)
        self.shutdown = Shutdown(
            self.lifecycle, self.runs, limits, options.notifier, end_run=self.end_run,
            stop_sources=lambda: self.triggers.close("the daemon is shutting down"),
        )  # fmt: skip
        self.requests = RequestHandler(
            router=self._router, replies=self.replies, runs=self.runs, lifecycle=self.lifecycle,
            limits=limits, registry=options.registry, workflows=options.workflows,
            status=self.status_reply, journal=self.journal, cancel_other=self.triggers.cancel_watch,
            more_ops={
                "triggers": self.triggers.triggers, "watch": self.triggers.watch,
                "call": self.calls.call,
            },
        )  # fmt: skip
        self.report = StatusReport(
            lifecycle=self.lifecycle, runs=self.runs, limits=limits, wedge=self.wedge,
            model_spec=options.model_spec, options=options, bound=self._router.bound,
            counters=[
                self.requests.counts, self.replies.counts, self.counts,
                self._router.connections.counts,
            ],
            sections={  # in wire order; mqtt and mcp are attached by serve (attach)
                "mqtt": lambda: None, "journal": self.journal.status,
                "triggers": self.triggers.status, "skill_calls": lambda: dict(self.calls.counts),
                "mcp": lambda: None,
            },
            threads=[
                self._loader.thread, self.journal.thread, self._router.connections.watch.thread,
                self.triggers.runner.thread, self.calls.thread,
            ],
        )  # fmt: skip
        self._demo = DemoMarks() if options.demo else None
        """Marks the answers drawn from the demo device (service/demomark.py), or None."""
        self._agent: Agent | None = None
        self._ticket: RunTicket | None = None
        """The run on the agent's thread, from its start until its reply, or past shutdown's
        bound while it has not returned."""

    def attach(self, name: str, status: Section, threads: Iterable[DaemonThread] = ()) -> None:
        """A part that serves beside the loop as a client of its socket, ``mqtt`` (the bridge) or
        ``mcp`` (the Model Context Protocol server): its map in ``status``, and its threads,
        whose crash shows there. ``serve`` attaches them before the loop starts."""
        if name not in ("mqtt", "mcp"):
            raise ValueError(f"no status section {name!r} to attach")
        self.report.sections[name] = status
        self.report.threads.extend(threads)

    def post(self, message: Posted) -> None:
        """Hand ``message`` to the serving loop, from any thread: the other threads' only way to
        it (they never touch a socket; docs/design.md, "Threads")."""
        self._posted.put(message)
        self._wakeup.wake()

    @property
    def bound(self) -> list[str]:
        return self._router.bound

    # -- setup and teardown -------------------------------------------------------------------

    def bind(self) -> list[str]:
        """Claim and bind every endpoint; raises EndpointError and leaves nothing bound."""
        try:
            bound = self._router.bind(self.options.endpoints, allow_remote=self.limits.allow_remote)
        except BaseException:
            self.close()
            raise
        self.journal.start()  # only now: the endpoint says first whether this daemon may serve
        return bound

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
                # A wedged run starves the watchdog: systemd restarts the daemon (service/wedge.py).
                if watchdog is not None and now >= next_watchdog and not self.wedge.wedged:
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
                self._read_posted()
                if self._ticket is not None:
                    self._ticket.check()  # never raises: a failure ends the run with an error
                    self.wedge.check(time.monotonic())
                # Every pass, not only when the monitor is readable: sends read its events too
                # (to check a run's connection), and the cap must follow them.
                connections.drain(self.runs.owners())
        finally:
            self.triggers.runner.stop()
            self.calls.stop()
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

    def _status_line(self) -> str:
        answered = self.counts["runs_finished"]
        return f"{self.report.state()}; {len(self.runs)} queued; {answered} runs answered"

    # -- runs: from the queue to a run thread and back ----------------------------------------

    def _expire_queued(self, now: float) -> None:
        for job in self.runs.expired(now):
            self.end_run(job, "deadline", "the deadline passed while the run waited in the queue")

    def _dispatch(self) -> None:
        agent = self._agent
        if self.lifecycle.phase != "ready" or agent is None:
            return
        job = self.runs.start_next()
        if job is None:
            return
        self.journal.started(job.request_id)
        try:
            self._ticket = start_job(agent, job, self.post)
        except Exception:
            log.exception("run %s could not start", job.request_id)
            self.post(Finished(job, None, None, "the run could not start"))

    def end_run(
        self, job: Job, code: ErrorCode, message: str, *, reason: str | None = None
    ) -> None:
        """Answer ``job``, a run that ends without a result, with the error ``code``, once: to
        its client, or to its trigger. The journal keeps it ended so, with ``reason`` (else
        ``code``) as why. The queue's deadline, a model that failed to load, a run that broke
        inside the daemon, a wedge and shutdown all end runs this one way."""
        if job.ended:
            return
        job.ended = True
        self.journal.ended(job.request_id, code, message, reason=reason)
        if job.trigger is not None:
            self.triggers.ended(job, code, message)  # no client: its trigger hears it
            return
        self.replies.fail(job.envelope, job.request_id, code, message, connection=job.connection)

    def _read_posted(self) -> None:
        while True:
            try:
                message = self._posted.get_nowait()
            except queue.Empty:
                return
            match message:
                case Send(job, payload):
                    if self._demo is not None:
                        payload = self._demo.event(job.request_id, payload)
                    self.replies.send_packed(job.envelope, payload, job.connection)
                case Finished():
                    # Marked before anything reads it: the reply, the journal, the triggers.
                    self._finish(message if self._demo is None else self._demo.finished(message))
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
            self.end_run(job, "internal", f"the model failed to load: {error}")
        self.lifecycle.request_stop()

    def _finish(self, message: Finished) -> None:
        job = message.job
        if job is not self.runs.running:
            return  # already answered `shutting_down` when it overran the shutdown bound
        self.runs.finished(job)
        self._ticket = None
        if self.wedge.returned(job):
            return  # answered when it was found wedged
        if message.payload is None:
            self.end_run(job, "internal", f"the run failed inside the daemon: {message.error}")
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


__all__ = ["MAX_FRAMES_PER_WAKE", "Posted", "Server"]
