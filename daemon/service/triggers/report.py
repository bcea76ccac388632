"""What ``triggers`` and ``status`` say about the triggers, read from the runner's records."""

from __future__ import annotations

from typing import Any

from edge_agentd.service.triggers.record import TriggerRecord
from edge_agentd.service.triggers.runner import TriggerRunner
from edge_agentd.service.triggers.schedule import describe


def _starts(record: TriggerRecord) -> dict[str, Any]:
    trigger = record.settings
    if trigger.every_s is not None:
        return {"every_s": trigger.every_s}
    if trigger.at is not None:
        return {"at": [f"{hour:02d}:{minute:02d}" for hour, minute in trigger.at]}
    when = trigger.when
    if when is None:
        return {}
    return {
        "skill": when.skill,
        "arguments": dict(when.arguments),
        "field": when.field,
        "above": when.above,
        "below": when.below,
        "for_s": when.hold_s,
        "hysteresis": when.hysteresis,
        "check_every_s": when.check_every_s,
    }


def _state(record: TriggerRecord, now: float) -> str:
    if not record.settings.enabled:
        return "disabled"
    if record.error is not None:
        return "failing"
    if record.condition is not None:
        return record.condition.state(now)
    cooling = record.last_fired is not None and now - record.last_fired < record.settings.cooldown
    return "cooling down" if cooling else "armed"


def _next(record: TriggerRecord) -> float | None:
    if not record.settings.enabled:
        return None
    if record.condition is not None:
        return record.condition.holds_until()
    return record.next_due


def trigger_entries(runner: TriggerRunner) -> list[dict[str, Any]]:
    """One map per trigger, in config order: the entries of ``TriggersResult.triggers``
    (docs/protocol.md, "`triggers`")."""
    zone = runner.clock.zone
    with runner.lock:
        now = runner.clock.now()
        return [
            {
                "name": name,
                "kind": record.settings.kind,
                "starts": _starts(record),
                "runs": {"query": record.settings.query, "workflow": record.settings.workflow},
                "state": _state(record, now),
                "error": record.error,
                "reading": record.reading.as_dict() if record.reading else None,
                "last_fired": describe(record.last_fired, zone),
                "next_fire": describe(_next(record), zone),
                "running": record.pending is not None,
                "last_run": dict(record.last_run) if record.last_run else None,
                "counts": {
                    "fired": record.fired,
                    "skipped": record.skipped,
                    "missed": record.missed,
                    "checks": record.checks,
                    "checks_failed": record.checks_failed,
                },
            }
            for name, record in runner.records.items()
        ]


def status_summary(runner: TriggerRunner) -> dict[str, Any]:
    """The ``triggers`` map of a status reply: how many, which are failing and why, firings."""
    with runner.lock:
        records = list(runner.records.values())
        return {
            "configured": len(records),
            "failing": [{"trigger": r.settings.name, "error": r.error} for r in records if r.error],
            "fired": sum(r.fired for r in records),
            "skipped": sum(r.skipped for r in records),
        }


__all__ = ["status_summary", "trigger_entries"]
