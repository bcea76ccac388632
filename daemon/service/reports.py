"""What ``skills`` and ``status`` tell a client, built from the registry and the loop's counters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge_agent.agent.registry import Registry


def skill_entries(registry: Registry, allowed: frozenset[str] | None) -> list[dict[str, Any]]:
    """One map per skill: what the model is told about it, and where it came from."""
    return [
        {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters_schema,
            "source": spec.source,
            "timeout_s": spec.timeout_s,
        }
        for spec in registry.select(allowed)
    ]


def counter_report(counters: Mapping[str, int]) -> dict[str, Any]:
    """The ``counters`` of a status reply, from the loop's flat counter names."""
    errors = {k[len("error_") :]: v for k, v in counters.items() if k.startswith("error_")}
    return {
        "requests": counters.get("frames", 0),
        "runs_accepted": counters.get("runs_accepted", 0),
        "runs_finished": counters.get("runs_finished", 0),
        "runs_cancelled": counters.get("runs_cancelled", 0),
        "replies_dropped": counters.get("replies_dropped", 0),
        "errors": sum(errors.values()),
        "errors_by_code": errors,
        "outcomes": {
            k[len("outcome_") :]: v for k, v in counters.items() if k.startswith("outcome_")
        },
    }


__all__ = ["counter_report", "skill_entries"]
