"""One trigger's record: its settings, its condition, its check in flight and what it did.

The runner's lock guards every field (docs/design.md, "Triggers").
"""

from __future__ import annotations

import dataclasses
from typing import Any

from edge_agentd.agent.supervision import RunThread
from edge_agentd.service.config.triggers import TriggerSettings
from edge_agentd.service.triggers.condition import Condition, Reading


@dataclasses.dataclass(eq=False)
class Check:
    token: int
    started: float
    deadline: float
    worker: RunThread


@dataclasses.dataclass(eq=False)
class TriggerRecord:
    """One trigger's settings and everything known of it; guarded by the runner's lock."""

    settings: TriggerSettings
    condition: Condition | None
    next_due: float | None = None
    """The next check (``when``) or firing (``at``, ``every``)."""
    check: Check | None = None
    checks: int = 0
    checks_failed: int = 0
    error: str | None = None
    reading: Reading | None = None
    last_fired: float | None = None
    last_due: float | None = None
    fired: int = 0
    skipped: int = 0
    missed: int = 0
    pending: str | None = None
    """The id of its run while queued or running: at most one at a time."""
    pending_reading: Reading | None = None
    last_run: dict[str, Any] | None = None


__all__ = ["Check", "TriggerRecord"]
