"""What ``skills`` and ``status`` tell a client, built from the registry, the model and the loop's
counters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge_agent.agent.jsonvalues import to_jsonable
from edge_agent.agent.prompt import signature_text
from edge_agent.agent.protocol import ModelHandle
from edge_agent.agent.registry import Registry
from edge_agent.wire import SkillEntry


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


def counter_report(counters: Mapping[str, int]) -> dict[str, Any]:
    """The ``counters`` of a status reply (a :class:`~edge_agent.wire.Counters` map, which
    tests/test_server.py checks), from the loop's flat counter names."""
    errors = {k[len("error_") :]: v for k, v in counters.items() if k.startswith("error_")}
    return {
        "requests": counters.get("frames", 0),
        "runs_accepted": counters.get("runs_accepted", 0),
        "runs_finished": counters.get("runs_finished", 0),
        "runs_cancelled": counters.get("runs_cancelled", 0),
        "replies_dropped": counters.get("replies_dropped", 0),
        "connections_accepted": counters.get("connections_accepted", 0),
        "connections_closed": counters.get("connections_closed", 0),
        "errors": sum(errors.values()),
        "errors_by_code": errors,
        "outcomes": {
            k[len("outcome_") :]: v for k, v in counters.items() if k.startswith("outcome_")
        },
    }


def model_info(model: ModelHandle | None, spec: str) -> dict[str, Any]:
    """The ``model`` of a status reply: its spec, and what the loaded model says of itself."""
    described: dict[str, Any] = {"spec": spec}
    if model is not None:
        # Whatever the handle reports must survive msgpack: paths and the like become strings.
        described.update(to_jsonable(model.info))
    return described


__all__ = ["counter_report", "model_info", "skill_entries"]
