"""How the serving loop answers each request: ``status``, ``skills``, ``cancel`` and ``run``.

Everything here runs on the loop's thread and answers at once; a ``run`` is only queued.
"""

from __future__ import annotations

import logging

from edge_agent.agent.workflow import Workflow
from edge_agent.service.loopstate import LoopState
from edge_agent.service.reports import skill_entries
from edge_agent.service.router import split_frames
from edge_agent.service.runqueue import job_for
from edge_agent.service.worker import interrupted_result
from edge_agent.wire import (
    CancelRequest,
    RunRequest,
    SkillsRequest,
    StatusRequest,
    WireError,
    accepted_reply,
    decode_request,
    error_reply,
    result_reply,
)

# The serving loop's log lines keep the logger name they had before the loop was split up.
log = logging.getLogger("edge_agent.service.server")

MAX_FRAMES_PER_WAKE = 256


class RequestHandlers(LoopState):
    """The serving loop's request side: read the frames, decode them, answer or queue each one."""

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


__all__ = ["MAX_FRAMES_PER_WAKE", "RequestHandlers"]
