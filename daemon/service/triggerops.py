"""The serving loop's side of the triggers: the ``triggers`` and ``watch`` ops, the open watches,
and each firing's way into the run queue and back. Everything here runs on the loop's thread.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from edge_agentd.agent.registry import Registry
from edge_agentd.agent.workflow import Workflow
from edge_agentd.protocol.triggerwire import (
    TriggersRequest,
    TriggersResult,
    WatchRequest,
    WatchResult,
)
from edge_agentd.protocol.wire import ErrorCode, EventReply, encode
from edge_agentd.service.config.settings import Settings
from edge_agentd.service.journal.keeper import Journal
from edge_agentd.service.replies import Replies
from edge_agentd.service.router import RouterSocket
from edge_agentd.service.runs.jobs import Finished, Job
from edge_agentd.service.runs.queue import RunQueue, run_options
from edge_agentd.service.triggers.firing import Firing, TriggerMemory
from edge_agentd.service.triggers.memory import JournalMemory
from edge_agentd.service.triggers.report import status_summary, trigger_entries
from edge_agentd.service.triggers.runner import TriggerRunner

log = logging.getLogger(__name__)

MAX_WATCHES = 64


@dataclasses.dataclass(eq=False)
class Watch:
    envelope: list[bytes]
    request_id: str
    connection: tuple[int, int]
    trigger: str | None
    sent: int = 0


class TriggerOps:
    """Queues firings as runs (source ``trigger:NAME``) and streams their results to watches."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        workflows: Mapping[str, Workflow],
        *,
        memory: TriggerMemory | None,
        post: Callable[[Firing], None],
        router: RouterSocket,
        replies: Replies,
        runs: RunQueue,
        journal: Journal,
    ) -> None:
        if memory is None and settings.triggers and journal.enabled:
            memory = JournalMemory(journal.path)  # the journal's record of the firings
        self.runner = TriggerRunner(settings.triggers, registry, post, memory=memory)
        self._router = router
        self._replies = replies
        self._runs = runs
        self._limits = settings.daemon
        self._workflows = workflows
        self._journal = journal
        self.watches: dict[tuple[bytes, str], Watch] = {}
        self.runner.listeners.append(self._publish)

    # -- firings ------------------------------------------------------------------------------

    def queue(self, firing: Firing, *, stopping: bool) -> None:
        """A firing from the runner: a run like any other, unless it would take the queue's last
        free slot (interactive asks go first) or the daemon is stopping."""
        if stopping:
            self.runner.refused(firing.trigger, firing.run_id, "the daemon is shutting down")
            return
        if not self._runs.room_to_spare():
            self.runner.refused(firing.trigger, firing.run_id, "the queue has no slot to spare")
            return
        workflow = self._workflows.get(firing.workflow) if firing.workflow else None
        # No client waits for a trigger's run: it has no deadline.
        options = run_options(firing.query, workflow, self._limits)
        job = Job(firing.run_id, [], options, stream=False, trigger=firing.trigger)
        self._runs.add(job)
        self._journal.queued(
            job.request_id, source=firing.source, query=firing.query, workflow=firing.workflow
        )
        log.info("trigger %s: run %s queued", firing.trigger, firing.run_id)

    def finished(self, message: Finished) -> None:
        """A trigger's run ended with a result: its outcome and answer go to the runner (and
        from there to the watches and the MQTT bridge)."""
        job = message.job
        if job.trigger is not None:
            outcome = message.outcome or "internal"
            self.runner.finished(job.trigger, job.request_id, outcome, message.answer)

    def ended(self, job: Job, code: ErrorCode, message: str) -> None:
        """A trigger's run that ends without a result: one that never started (shutdown, a
        model that failed to load) is counted skipped; one that broke, or overran shutdown,
        ended ``internal`` or ``interrupted``."""
        if job.trigger is None:
            return
        if job.started is None:
            self.runner.refused(job.trigger, job.request_id, message)
            return
        outcome = "internal" if code == "internal" else "interrupted"
        self.runner.finished(job.trigger, job.request_id, outcome, None)

    def status(self) -> dict[str, Any] | None:
        """The ``triggers`` map of ``status``; None without ``[[triggers]]``."""
        return status_summary(self.runner) if self.runner.records else None

    # -- the ops ------------------------------------------------------------------------------

    def triggers(self, envelope: list[bytes], request: TriggersRequest, req_shape: bool) -> None:
        reply = TriggersResult(id=request.id, triggers=trigger_entries(self.runner))
        self._replies.send(envelope, reply)

    def watch(self, envelope: list[bytes], request: WatchRequest, req_shape: bool) -> None:
        fail = self._replies.fail
        if req_shape:
            fail(envelope, request.id, "bad_request", "watch streams: use a bare DEALER socket")
            return
        if request.trigger is not None and request.trigger not in self.runner.records:
            known = ", ".join(self.runner.records) or "none configured"
            fail(envelope, request.id, "bad_request", f"there is no such trigger (known: {known})")
            return
        key = (envelope[0], request.id)
        if key in self.watches:
            fail(envelope, request.id, "bad_request", "a watch with this id is already open")
            return
        self._forget_closed()
        if len(self.watches) >= MAX_WATCHES:
            fail(envelope, request.id, "busy", f"{MAX_WATCHES} watches are already open")
            return
        connection = self._router.connections.connection(self._router.last_fd)
        self.watches[key] = Watch(envelope, request.id, connection, request.trigger)

    def cancel_watch(self, target: str, owner: list[bytes]) -> bool:
        """End this connection's watch ``target`` with its ``result``; False when none."""
        watch = self.watches.pop((owner[0], target), None) if owner else None
        if watch is None:
            return False
        self._replies.send_packed(
            watch.envelope,
            encode(WatchResult(id=watch.request_id, sent=watch.sent)),
            watch.connection,
        )
        return True

    def close(self, reason: str) -> None:
        """Shutdown: every open watch ends with ``shutting_down``."""
        for watch in list(self.watches.values()):
            self._replies.fail(
                watch.envelope, watch.request_id, "shutting_down", reason, watch.connection
            )
        self.watches.clear()

    def _forget_closed(self) -> None:
        alive = self._router.connections.alive
        for key, watch in list(self.watches.items()):
            if not alive(watch.connection):
                del self.watches[key]

    def _publish(self, message: dict[str, Any]) -> None:
        self._forget_closed()
        for watch in self.watches.values():
            if watch.trigger not in (None, message["trigger"]):
                continue
            reply = EventReply(id=watch.request_id, seq=watch.sent, event=message)
            watch.sent += 1
            self._replies.send_packed(watch.envelope, encode(reply), watch.connection)


__all__ = ["MAX_WATCHES", "TriggerOps", "Watch"]
