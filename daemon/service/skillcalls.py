"""The ``call`` op: one skill called directly, without the model, as triggers' checks call them.

The serving loop only checks the request and hands the call to a pooled run thread of the
agents' own pool (:func:`~edge_agentd.agent.supervision.shared_run_threads`): a skill whose call
hung is not started again, by a call, a run or a check, until it returns. The call's thread posts
its reply back to the loop; a watch thread of its own (a :class:`DaemonThread`, so its crash shows
in ``status``) abandons a call that overruns its timeout and answers it. The loop never waits on
a skill. Each call is journaled as a run from its ``source`` (``mcp`` for the Model Context
Protocol server), its query ``call SKILL ARGUMENTS``.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from edge_agentd.agent.jsonvalues import compact_json, format_validation_error, to_jsonable
from edge_agentd.agent.registry import Registry, SkillSpec
from edge_agentd.agent.run import SkillStillRunning
from edge_agentd.agent.supervision import RunThread, shared_run_threads
from edge_agentd.protocol.callwire import CallRequest, CallResult
from edge_agentd.protocol.wire import encode
from edge_agentd.service.journal.keeper import Journal, LoopCall
from edge_agentd.service.replies import Replies
from edge_agentd.service.threads.daemonthread import DaemonThread

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
"""A skill that sets no timeout gets this many seconds when called directly (a run's deadline
bounds it in a run; here nothing else would)."""
MAX_IN_FLIGHT = 16
"""Calls running at once; beyond, ``busy``: each holds a thread while its skill runs."""
STOP_S = 2.0
QUERY_CHARS = 500


@dataclasses.dataclass(eq=False)
class Call:
    """One call in flight: where its reply goes, and until when its skill may run."""

    request: CallRequest
    envelope: list[bytes]
    spec: SkillSpec
    worker: RunThread
    began: float
    deadline: float
    done: bool = False


class SkillCalls:
    """The serving loop's ``call`` handler and the calls in flight.

    ``counts`` holds ``calls``, ``calls_ok``, ``calls_failed``, ``calls_timed_out`` and
    ``calls_refused``.
    """

    def __init__(
        self,
        registry: Registry,
        journal: Journal,
        replies: Replies,
        post: Callable[[LoopCall], None],
        *,
        run_holds: Callable[[str], bool] = lambda _: False,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self._registry = registry
        self._journal = journal
        self._replies = replies
        self._post = post
        self._max = max_in_flight
        self._run_holds = run_holds
        """Whether a run with this id is queued or running: a call may not take its id (the
        journal keeps one record per id)."""
        self._threads = shared_run_threads()
        self._lock = threading.Condition()
        self._calls: list[Call] = []
        self._stopped = False
        self.counts: collections.Counter[str] = collections.Counter()
        self.thread = DaemonThread("edge-agent-calls", self._watch, ask_stop=self._ask_stop)

    # -- the serving loop's side ----------------------------------------------------------------

    def call(self, envelope: list[bytes], request: CallRequest, req_shape: bool) -> None:
        """Check ``request`` and start its skill on a pooled thread; never waits on it."""
        self.counts["calls"] += 1
        spec = self._registry.get(request.skill)
        if spec is None:
            self.counts["calls_refused"] += 1
            known = ", ".join(self._registry.names()) or "none"
            message = f"no skill named {request.skill!r}; the skills are: {known}"
            self._replies.fail(envelope, request.id, "not_found", message)
            return
        try:
            arguments = spec.validate_arguments(request.arguments)
        except ValidationError as exc:
            self.counts["calls_refused"] += 1
            problem = format_validation_error(spec.name, exc)
            self._replies.fail(envelope, request.id, "bad_request", problem)
            return
        with self._lock:
            taken = any(call.request.id == request.id for call in self._calls)
        if taken or self._run_holds(request.id):
            self.counts["calls_refused"] += 1
            message = "a run or call with this id is already going; use a fresh id"
            self._replies.fail(envelope, request.id, "bad_request", message)
            return
        with self._lock:
            if len(self._calls) >= self._max:
                self.counts["calls_refused"] += 1
                message = f"{self._max} skill calls are running; try again shortly"
                self._replies.fail(envelope, request.id, "busy", message)
                return
        query = f"call {spec.name} {compact_json(request.arguments)}"[:QUERY_CHARS]
        self._journal.queued(request.id, source=request.source, query=query)
        self._journal.started(request.id)
        now = time.monotonic()
        try:
            self._threads.check_free(spec)
        except SkillStillRunning as exc:
            self._answer(request, envelope, spec, now, result=None, error=str(exc))
            return
        limit = spec.timeout_s if spec.timeout_s is not None else DEFAULT_TIMEOUT_S
        call = Call(request, envelope, spec, self._threads.take(), now, now + limit)
        with self._lock:
            self._calls.append(call)
            self._lock.notify_all()
        self.thread.start()  # the first call starts the watch; later ones do nothing
        call.worker.start(self._body, call, arguments)

    def _answer(
        self,
        request: CallRequest,
        envelope: list[bytes],
        spec: SkillSpec,
        began: float,
        *,
        result: Any,
        error: str | None,
    ) -> None:
        """On the loop: send the call's one reply and journal it."""
        ms = round((time.monotonic() - began) * 1000, 3)
        ok = error is None
        self.counts["calls_ok" if ok else "calls_failed"] += 1
        reply = CallResult(
            id=request.id, skill=spec.name, ok=ok, result=result if ok else None, error=error, ms=ms
        )
        payload = encode(reply)
        self._replies.send_packed(envelope, payload)
        answer = compact_json(result)[:QUERY_CHARS] if ok else error
        self._journal.finished(
            request.id, payload, outcome="answered" if ok else None, answer=answer
        )

    # -- the call's own thread ------------------------------------------------------------------

    def _body(self, call: Call, arguments: dict[str, Any]) -> None:
        result: Any = None
        error: str | None = None
        try:
            result = to_jsonable(self._registry.call(call.spec, arguments))
        except BaseException as exc:  # noqa: BLE001 - a skill's failure is its call's answer
            # SystemExit and KeyboardInterrupt from a plugin too: raised on, they would end a
            # pooled thread with the call never answered (docs/skills.md).
            error = f"{type(exc).__name__}: {exc}"[:300]
        with self._lock:
            if call.done:
                return  # abandoned at its timeout: answered already, and this thread retired
            call.done = True
            self._calls.remove(call)
        self._threads.give_back(call.worker)
        self._post(
            lambda: self._answer(
                call.request, call.envelope, call.spec, call.began, result=result, error=error
            )
        )

    # -- the watch ------------------------------------------------------------------------------

    def _ask_stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()

    def _watch(self) -> None:
        """Sleep until the next call's deadline; abandon and answer each call past its own."""
        while True:
            with self._lock:
                if self._stopped:
                    return
                now = time.monotonic()
                late = [call for call in self._calls if call.deadline <= now]
                for call in late:
                    call.done = True
                    self._calls.remove(call)
                if not late:
                    soonest = min((call.deadline for call in self._calls), default=None)
                    self._lock.wait(None if soonest is None else soonest - now)
                    continue
            for call in late:
                self._threads.abandon(call.spec, call.worker)
                limit = call.deadline - call.began
                error = f"skill {call.spec.name!r} ran past its timeout of {limit:g} s"
                self._post(self._late(call, error))

    def _late(self, call: Call, error: str) -> LoopCall:
        def answer() -> None:  # on the loop, which alone counts
            self.counts["calls_timed_out"] += 1
            self._answer(
                call.request, call.envelope, call.spec, call.began, result=None, error=error
            )

        return answer

    def in_flight(self) -> int:
        with self._lock:
            return len(self._calls)

    def stop(self) -> None:
        self.thread.stop(STOP_S)


__all__ = ["DEFAULT_TIMEOUT_S", "MAX_IN_FLIGHT", "SkillCalls"]
