"""How the serving loop answers each request: ``run``, ``status``, ``skills``, ``cancel``,
``result`` and ``runs``.

Everything here runs on the loop's thread and answers at once; a ``run`` is only queued. Each op
of :data:`edge_agentd.protocol.wire.PROTOCOL` has one handler in :attr:`RequestHandler.handlers`.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Mapping
from typing import Any

from edge_agentd.agent.prompt import signature_text
from edge_agentd.agent.registry import Registry
from edge_agentd.agent.workflow import Workflow
from edge_agentd.protocol.wire import (
    PROTOCOL,
    AcceptedReply,
    CancelledRun,
    CancelRequest,
    CancelResult,
    ErrorReply,
    ResultRequest,
    RunRequest,
    RunsRequest,
    SkillEntry,
    SkillsRequest,
    SkillsResult,
    StatusRequest,
    WireError,
    decode_request,
    encode,
)
from edge_agentd.service.config.settings import DaemonSettings
from edge_agentd.service.journal.keeper import Journal, Waiter
from edge_agentd.service.journal.queries import Answer, keyed_query, result_query, runs_query
from edge_agentd.service.lifecycle import Lifecycle
from edge_agentd.service.replies import Replies
from edge_agentd.service.router import RouterSocket, is_auto_routing_id, split_frames
from edge_agentd.service.runs.jobs import interrupted_result
from edge_agentd.service.runs.queue import RunQueue, job_for

log = logging.getLogger(__name__)

MAX_FRAMES_PER_WAKE = 256

Handler = Callable[[list[bytes], Any, bool], None]
"""``handler(envelope, request, req_shape)``; ``req_shape``: the client sent the REQ envelope."""


class RequestHandler:
    """The serving loop's request side: read the frames, decode them, answer or queue each one.

    ``counts`` holds ``frames``, ``op_<op>``, ``runs_accepted`` and ``runs_cancelled``.
    """

    def __init__(
        self,
        *,
        router: RouterSocket,
        replies: Replies,
        runs: RunQueue,
        lifecycle: Lifecycle,
        limits: DaemonSettings,
        registry: Registry,
        workflows: dict[str, Workflow],
        status: Callable[[str, list[bytes]], Mapping[str, Any]],
        journal: Journal,
        more_ops: Mapping[str, Handler] | None = None,
        cancel_other: Callable[[str, list[bytes]], bool] | None = None,
    ) -> None:
        self._router = router
        self._replies = replies
        self._runs = runs
        self._lifecycle = lifecycle
        self._limits = limits
        self._registry = registry
        self._workflows = workflows
        self._status_reply = status
        self._journal = journal
        self.counts: collections.Counter[str] = collections.Counter()
        self.handlers: dict[str, Handler] = {
            "run": self.run,
            "status": self.status,
            "skills": self.skills,
            "cancel": self.cancel,
            "result": self.result,
            "runs": self.runs,
            **(more_ops or {}),  # triggers, watch (edge_agentd.service.triggerops)
        }
        self._cancel_other = cancel_other
        if self.handlers.keys() != PROTOCOL.keys():
            raise RuntimeError("every op of the protocol needs exactly one handler")

    # -- reading ------------------------------------------------------------------------------

    def read(self) -> None:
        """Answer or queue what waits on the socket, at most MAX_FRAMES_PER_WAKE messages."""
        for _ in range(MAX_FRAMES_PER_WAKE):
            frames = self._router.receive()
            if frames is None:
                return
            self.counts["frames"] += 1
            try:
                self.answer(frames)
            except Exception:
                log.exception("request handling failed")
                envelope = split_frames(frames)[0]
                reply = ErrorReply(id=None, code="internal", message="the daemon hit a bug")
                self._replies.send(envelope, reply)

    def answer(self, frames: list[bytes]) -> None:
        envelope, payloads, req_shape = split_frames(frames)
        if not is_auto_routing_id(envelope[0]):
            # Another peer could choose the same routing id once this one leaves, and be sent
            # what was meant for it: a connection is known only by an id the ROUTER made up.
            self._replies.fail(
                envelope,
                None,
                "bad_request",
                "this connection set its own ZeroMQ routing id; leave ZMQ_ROUTING_ID unset",
            )
            return
        if self._router.last_fd < 0:
            self._replies.fail(
                envelope,
                None,
                "bad_request",
                "this connection speaks ZMTP 1.0; use ZeroMQ 3 or later",
            )
            return
        if len(payloads) != 1:
            self._replies.fail(
                envelope,
                None,
                "bad_request",
                f"expected one msgpack frame after the envelope, got {len(payloads)}",
            )
            return
        try:
            request = decode_request(
                payloads[0],
                max_bytes=self._limits.max_request_bytes,
                max_query_chars=self._limits.max_query_chars,
            )
        except WireError as exc:
            self._replies.fail(envelope, exc.request_id, exc.code, exc.message)
            return
        self.counts[f"op_{request.op}"] += 1
        self.handlers[request.op](envelope, request, req_shape)

    # -- the ops ------------------------------------------------------------------------------

    def status(self, envelope: list[bytes], request: StatusRequest, req_shape: bool) -> None:
        self._replies.send_packed(envelope, encode(self._status_reply(request.id, envelope)))

    def skills(self, envelope: list[bytes], request: SkillsRequest, req_shape: bool) -> None:
        try:
            workflow = self._workflow(request.workflow)
        except WireError as exc:
            self._replies.fail(envelope, request.id, exc.code, exc.message)
            return
        allowed = workflow.allowed_skills if workflow else None
        reply = SkillsResult(id=request.id, skills=skill_entries(self._registry, allowed))
        self._replies.send(envelope, reply)

    def run(self, envelope: list[bytes], request: RunRequest, req_shape: bool) -> None:
        # A REQ client gets exactly one reply, so it never streams.
        stream = request.stream and not req_shape
        connection = self._router.connections.connection(self._router.last_fd)
        if self._lifecycle.stopping:
            self._replies.fail(envelope, request.id, "shutting_down", "the daemon is shutting down")
            return
        holder = None if request.key is None else self._journal.key_holder(request.key)
        if holder is None:
            self._queue(envelope, request, stream, connection)
        elif holder.asks(request.query, request.workflow):
            self._answer_from(holder.run_id, envelope, request, stream, connection)
        else:
            # Never another question's answer under this one's name: the caller reused a key.
            self._journal.counts["key_conflicts"] += 1
            # Another client chose that id: shown escaped unless printable, for a terminal.
            shown = holder.run_id if holder.run_id.isprintable() else ascii(holder.run_id)
            message = (
                f"this key belongs to run {shown}, which asked another query or workflow:"
                " a new question needs a new key"
            )
            self._replies.fail(envelope, request.id, "key_conflict", message, connection)

    def _queue(
        self,
        envelope: list[bytes],
        request: RunRequest,
        stream: bool,
        connection: tuple[int, int],
    ) -> None:
        if self._lifecycle.stopping:
            self._replies.fail(envelope, request.id, "shutting_down", "the daemon is shutting down")
            return
        connections = self._router.connections
        if connections.over_cap(self._router.last_fd):
            # Answered, not dropped, and the connection kept: closing it would only make a
            # ZeroMQ client reconnect at once (docs/protocol.md, "Limits and hostile input").
            self._replies.fail(
                envelope,
                request.id,
                "busy",
                f"the daemon already serves its {connections.cap} connections; close this one"
                " and try again later",
            )
            return
        if self._runs.holds(request.id):
            self._replies.fail(
                envelope,
                request.id,
                "bad_request",
                "a run with this id is already queued or running",
            )
            return
        if self._runs.full:
            self._replies.fail(
                envelope,
                request.id,
                "busy",
                f"the daemon is busy: its queue is full ({len(self._runs)} waiting, its "
                "queue_limit); try again later",
            )
            return
        if self._runs.count_of(envelope[:1]) >= self._limits.queue_per_client:
            self._replies.fail(
                envelope,
                request.id,
                "busy",
                f"this connection already has {self._limits.queue_per_client} runs queued or"
                " running (queue_per_client); wait for one to finish",
            )
            return
        try:
            workflow = self._workflow(request.workflow)
        except WireError as exc:
            self._replies.fail(envelope, request.id, exc.code, exc.message)
            return
        job = job_for(request, envelope, workflow, self._limits, stream=stream)
        job.connection = connection
        position = self._runs.add(job)
        self.counts["runs_accepted"] += 1
        self._journal.queued(
            job.request_id,
            source=request.source,
            query=request.query,
            key=request.key,
            workflow=request.workflow,
        )
        if stream:
            accepted = AcceptedReply(
                id=job.request_id, position=position, max_iterations=job.options.max_iterations
            )
            self._replies.send(envelope, accepted)

    def _answer_from(
        self,
        run_id: str,
        envelope: list[bytes],
        request: RunRequest,
        stream: bool,
        connection: tuple[int, int],
    ) -> None:
        """A ``run`` whose key an earlier run holds gets that run's result, never a second run:
        at its end if it is still going, else from the journal (a new run only when the journal
        has no result to give, as after a failed write)."""
        if self._runs.holds(run_id):
            self._journal.wait_on(run_id, Waiter(envelope, request.id, connection))
            return

        def then(payload: bytes | None) -> None:
            if payload is None:
                self._queue(envelope, request, stream, connection)
            else:
                self._journal.counts["deduplicated"] += 1
                self._replies.send_packed(envelope, payload, connection)

        self._journal.read(keyed_query(run_id, request.id), then)

    def result(self, envelope: list[bytes], request: ResultRequest, req_shape: bool) -> None:
        target = request.target
        if (target is None) == (request.key is None):
            message = (
                "result takes `target` (a run's id) or `key` (its idempotency key), one of them"
            )
            self._replies.fail(envelope, request.id, "bad_request", message)
            return
        if target is None and request.key is not None and self._journal.enabled:
            target = self._journal.run_for_key(request.key)
            if target is None:
                message = "the journal holds no run with this key"
                self._replies.fail(envelope, request.id, "not_found", message)
                return
        query = result_query(target or "", request.id, self._journal)
        self._journal_answer(envelope, request.id, query)

    def runs(self, envelope: list[bytes], request: RunsRequest, req_shape: bool) -> None:
        query = runs_query(request.limit, request.id, self._journal)
        self._journal_answer(envelope, request.id, query)

    def _journal_answer(
        self, envelope: list[bytes], request_id: str, query: Callable[[Any], Answer]
    ) -> None:
        connection = self._router.connections.connection(self._router.last_fd)
        if not self._journal.enabled:
            message = "the run journal is off ([journal] enabled = false)"
            self._replies.fail(envelope, request_id, "no_journal", message, connection)
            return

        def then(answer: Answer) -> None:
            if isinstance(answer, bytes):
                self._replies.send_packed(envelope, answer, connection)
            else:
                self._replies.fail(envelope, request_id, answer[0], answer[1], connection)

        self._journal.read(query, then)

    def cancel(self, envelope: list[bytes], request: CancelRequest, req_shape: bool) -> None:
        # Only the connection (ZeroMQ routing id) that sent a run may cancel it; to any other, a
        # run it does not own is answered like one that does not exist.
        was: CancelledRun | None = None
        owner = envelope[:1]
        job = self._runs.remove_waiting(request.target, owner)
        running = self._runs.running
        if job is not None:
            was = "queued"
            job.cancelled.set()
            self.counts["runs_cancelled"] += 1
            payload = interrupted_result(job, "cancelled")
            self._journal.finished(job.request_id, payload, outcome="interrupted", answer=None)
            self._replies.send_packed(job.envelope, payload, job.connection)
        elif (
            running is not None
            and running.request_id == request.target
            and running.envelope[:1] == owner
        ):
            was = "running"
            running.cancelled.set()
            self.counts["runs_cancelled"] += 1
        elif self._cancel_other is not None and self._cancel_other(request.target, owner):
            was = "watch"
        self._replies.send(
            envelope,
            CancelResult(id=request.id, target=request.target, cancelled=was is not None, was=was),
        )

    def _workflow(self, name: str | None) -> Workflow | None:
        if name is None:
            return None
        workflow = self._workflows.get(name)
        if workflow is None:
            known = ", ".join(sorted(self._workflows)) or "none configured"
            # The name is not repeated back: error replies never echo the client's input.
            raise WireError("bad_request", f"there is no such workflow (known: {known})")
        return workflow


def skill_entries(registry: Registry, allowed: frozenset[str] | None) -> list[SkillEntry]:
    """One entry per skill: what the model is told about it, and where it came from."""
    return [
        SkillEntry(
            name=spec.name,
            description=spec.description,
            parameters=spec.parameters_schema,
            source=spec.source,
            timeout_s=spec.timeout_s,
            signature=signature_text(spec),
        )
        for spec in registry.select(allowed)
    ]


__all__ = ["MAX_FRAMES_PER_WAKE", "Handler", "RequestHandler", "skill_entries"]
