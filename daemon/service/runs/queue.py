"""The runs waiting for the one model, in arrival order, and the run it is busy with.

Pure bookkeeping, owned by the serving loop's thread: it decides nothing about replies.
"""

from __future__ import annotations

import collections
import time

from edge_agentd.agent.run import RunOptions
from edge_agentd.agent.workflow import Workflow
from edge_agentd.protocol.wire import RunRequest
from edge_agentd.service.config.settings import DaemonSettings
from edge_agentd.service.runs.jobs import Job


def run_options(
    query: str,
    workflow: Workflow | None,
    limits: DaemonSettings,
    *,
    max_iterations: int | None = None,
    deadline_s: float | None = None,
) -> RunOptions:
    """A run's options with the server's policy applied, for a client's run and a trigger's:
    iterations as asked, else the workflow's, else the daemon's, and capped; the deadline made
    absolute."""
    wanted = max_iterations or (workflow.max_iterations if workflow else None)
    return RunOptions(
        query,
        workflow,
        max_iterations=min(wanted or limits.max_iterations, limits.max_iterations_cap),
        max_retries=limits.max_retries,
        deadline=None if deadline_s is None else time.monotonic() + deadline_s,
    )


def job_for(
    request: RunRequest,
    envelope: list[bytes],
    workflow: Workflow | None,
    limits: DaemonSettings,
    *,
    stream: bool,
) -> Job:
    """The Job of a client's ``run`` request; with no deadline asked, the daemon's default."""
    deadline_s = (
        request.deadline_ms / 1000 if request.deadline_ms is not None else limits.default_deadline_s
    )
    options = run_options(
        request.query,
        workflow,
        limits,
        max_iterations=request.max_iterations,
        deadline_s=deadline_s,
    )
    return Job(request.id, envelope, options, stream=stream, asked_over=request.source)


TRIGGER_PATIENCE = 2
"""How many asks a waiting trigger's run lets start ahead of it. Asks go first, but a queue
that is never empty of them (a script asking in a loop, an MQTT flood) must not hold an alert
back for ever: a soak's trigger run waited 42 minutes behind a full queue of asks."""


class RunQueue:
    """At most ``limit`` waiting runs plus the running one; ids are unique among them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running: Job | None = None
        self._waiting: collections.OrderedDict[str, Job] = collections.OrderedDict()
        self._per_client: collections.Counter[bytes] = collections.Counter()
        """Runs waiting or running, by the routing id of the connection that sent them."""
        self._passed: collections.Counter[str] = collections.Counter()
        """How many asks started ahead of each waiting trigger's run, by its request id."""

    def __len__(self) -> int:
        return len(self._waiting)

    def holds(self, request_id: str) -> bool:
        return request_id in self._waiting or (
            self.running is not None and self.running.request_id == request_id
        )

    def count_of(self, routing_id: list[bytes]) -> int:
        """How many runs that connection has waiting or running (for ``queue_per_client``)."""
        return self._per_client[routing_id[0]] if routing_id else 0

    @property
    def full(self) -> bool:
        # With the model idle, the head of the queue is the run about to start, not a waiting
        # one: two requests that arrive in the same instant must not see "busy" for a free model.
        capacity = self.limit + (self.running is None)
        return len(self._waiting) >= capacity

    def room_to_spare(self) -> bool:
        """Whether a trigger's run may be queued: it never takes the last free slot, which is
        kept for an interactive ask (docs/design.md, "Triggers")."""
        capacity = self.limit + (self.running is None)
        return len(self._waiting) + 1 < capacity

    def add(self, job: Job) -> int:
        """Queue ``job``; returns how many runs are ahead of it."""
        self._waiting[job.request_id] = job
        if job.envelope:  # a trigger's run has no connection, and no per-client share
            self._per_client[job.envelope[0]] += 1
        return len(self._waiting) - 1 + (self.running is not None)

    def remove_waiting(self, request_id: str, routing_id: list[bytes] | None = None) -> Job | None:
        """Take a queued run out; with ``routing_id``, only when that connection queued it."""
        job = self._waiting.get(request_id)
        if job is None or (routing_id is not None and job.envelope[:1] != routing_id):
            return None
        return self._left(self._waiting.pop(request_id))

    def owners(self) -> set[int]:
        """The connections (fds) with a run waiting or running."""
        fds = {job.connection[0] for job in self._waiting.values()}
        if self.running is not None:
            fds.add(self.running.connection[0])
        return fds

    def expired(self, now: float) -> list[Job]:
        """Remove and return the waiting runs whose deadline has passed."""
        late = [
            job
            for job in self._waiting.values()
            if job.options.deadline is not None and job.options.deadline <= now
        ]
        for job in late:
            self._left(self._waiting.pop(job.request_id))
        return late

    def next_deadline(self) -> float | None:
        deadlines = [
            job.options.deadline
            for job in self._waiting.values()
            if job.options.deadline is not None
        ]
        return min(deadlines) if deadlines else None

    def start_next(self) -> Job | None:
        """Make the oldest waiting run the running one, if the model is free."""
        if self.running is not None or not self._waiting:
            return None
        # Interactive asks go first; a trigger's run waits behind at most TRIGGER_PATIENCE of
        # them, so a queue never empty of asks still runs it.
        ask = next((j for j in self._waiting.values() if j.trigger is None), None)
        fired = next((j for j in self._waiting.values() if j.trigger is not None), None)
        if ask is not None and (fired is None or self._passed[fired.request_id] < TRIGGER_PATIENCE):
            chosen = ask
            for job in self._waiting.values():
                if job.trigger is not None:
                    self._passed[job.request_id] += 1
        else:
            chosen = fired or next(iter(self._waiting.values()))
        self.running = self._waiting.pop(chosen.request_id)
        self._passed.pop(chosen.request_id, None)
        return self.running

    def drain(self) -> list[Job]:
        """Remove and return every waiting run."""
        jobs = list(self._waiting.values())
        self._waiting.clear()
        for job in jobs:
            self._left(job)
        return jobs

    def finished(self, job: Job) -> None:
        """The running run ``job`` was answered (or given up): the model is free."""
        if self.running is job:
            self.running = None
        self._left(job)

    def _left(self, job: Job) -> Job:
        self._passed.pop(job.request_id, None)
        if job.envelope:
            owner = job.envelope[0]
            self._per_client[owner] -= 1
            if self._per_client[owner] <= 0:
                del self._per_client[owner]
        return job


__all__ = ["TRIGGER_PATIENCE", "RunQueue", "job_for"]
