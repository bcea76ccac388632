"""How a run that ends without a result is answered: an error to its client, or to its trigger.

The queue's deadline, a model that failed to load, a run that broke inside the daemon and
shutdown all end runs this one way, and the journal keeps each so.
"""

from __future__ import annotations

from edge_agentd.protocol.wire import ErrorCode
from edge_agentd.service.journal.journal import Journal
from edge_agentd.service.replies import Replies
from edge_agentd.service.runs.jobs import Job
from edge_agentd.service.triggerops import TriggerOps


class RunEnds:
    """Ends runs on the serving loop's thread."""

    def __init__(self, journal: Journal, triggers: TriggerOps, replies: Replies) -> None:
        self._journal = journal
        self._triggers = triggers
        self._replies = replies

    def end(self, job: Job, code: ErrorCode, message: str, *, reason: str | None = None) -> None:
        """Answer ``job`` with the error ``code``, once; the journal keeps it ended so, with
        ``reason`` (else ``code``) as why."""
        if job.ended:
            return
        job.ended = True
        self._journal.ended(job.request_id, code, message, reason=reason)
        if job.trigger is not None:
            self._triggers.ended(job, code, message)  # no client: its trigger hears it
            return
        self._replies.fail(job.envelope, job.request_id, code, message, connection=job.connection)


__all__ = ["RunEnds"]
