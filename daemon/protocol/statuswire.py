"""The ``status`` op's result in protocol v1: the daemon's state, its queue, the run it is busy
with and its counters.

docs/protocol.md, "status", is the prose version; :mod:`edge_agentd.protocol.wire` holds it in
the protocol's table.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from edge_agentd.protocol.messages import Message, ResultBase

DaemonState = Literal["loading", "ready", "busy", "degraded", "stopping", "stopped"]
"""What ``status`` says the daemon is doing. Clients never see ``stopped``: the socket is gone.
``degraded``: a run is wedged (``wedged`` says which; the daemon awaits its restart), or one of
its threads crashed (``crashed_threads`` says which and why)."""


class SkillProblem(Message):
    source: str
    error: str


class Counters(Message):
    requests: int
    runs_accepted: int
    runs_finished: int
    runs_cancelled: int
    replies_dropped: int
    connections_accepted: int
    connections_closed: int
    connections_over_cap: int
    connections_paused: int
    connections_refused_at_limit: int
    connections_past_pause: int
    errors: int
    errors_by_code: dict[str, int]
    outcomes: dict[str, int]


class RunningRun(Message):
    """The run the model is busy with, as ``status`` tells it."""

    id: str | None
    """Its id, told only to the connection that sent it: nil for every other client."""
    source: str
    """``zmq``, ``mqtt`` or ``trigger:NAME``."""
    step: int
    """The step it is on, from 1."""
    max_iterations: int
    seconds: float
    """Since it started (its time in the queue not counted)."""


class StatusResult(ResultBase):
    """The daemon's state, answered at once even mid-run."""

    op: Literal["status"] = "status"
    state: DaemonState
    protocol: int
    pid: int
    uptime_s: float
    queue_depth: int
    queue_limit: int
    running: RunningRun | None
    """Nil only when no run is going: ``state`` is ``busy`` exactly when it is a map."""
    model: dict[str, Any]
    """At least ``spec``; a loaded model adds what it reports about itself."""
    endpoints: list[str]
    workflows: list[str]
    skills: int
    skill_problems: list[SkillProblem]
    counters: Counters
    mqtt: dict[str, Any] | None = None
    """The MQTT bridge's link and counters (docs/mqtt.md); None without ``[mqtt]``."""
    journal: dict[str, Any] | None = None
    """The run journal's state: ``ok``, ``degraded`` (and why) or ``off``; its size."""
    triggers: dict[str, Any] | None = None
    """Triggers configured, failing (and why), fired; None without ``[[triggers]]``."""
    skill_calls: dict[str, int] = Field(default_factory=dict)
    """The ``call`` op's counters: ``calls``, ``calls_ok``, ``calls_failed``, ``calls_timed_out``,
    ``calls_refused``."""
    mcp: dict[str, Any] | None = None
    """The Model Context Protocol server's address and counters (docs/mcp.md); None without
    ``[mcp]``."""
    crashed_threads: dict[str, str] = Field(default_factory=dict)
    """The daemon's own threads whose loop crashed, by name: what ended it. Empty when well."""
    wedged: dict[str, Any] | None = None
    """The run that did not return long past its deadline (``run_id``, ``source``,
    ``overdue_s``, ``restart``), or nil: see ``degraded``."""


__all__ = ["Counters", "DaemonState", "RunningRun", "SkillProblem", "StatusResult"]
