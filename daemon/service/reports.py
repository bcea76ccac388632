"""What ``skills`` and ``status`` tell a client, built from the registry, the model and the loop's
counters."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from edge_agentd.agent.jsonvalues import MAX_REASON_CHARS, UnshowableValue, to_jsonable
from edge_agentd.agent.prompt import signature_text
from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.agent.registry import Registry
from edge_agentd.protocol.wire import SkillEntry


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
    """The ``counters`` of a status reply (a :class:`~edge_agentd.protocol.wire.Counters` map, which
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
        "connections_over_cap": counters.get("connections_over_cap", 0),
        "connections_paused": counters.get("connections_paused", 0),
        "connections_refused_at_limit": counters.get("connections_refused_at_limit", 0),
        "connections_past_pause": counters.get("connections_past_pause", 0),
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
        info = model.info
        # Whatever the handle reports must survive msgpack: paths and the like become strings.
        # A flat map of plain values (the usual case, asked on every status) is taken as it is.
        try:
            described.update(info if _plain(info) else to_jsonable(info))
        except UnshowableValue as exc:
            described["error"] = str(exc)[:MAX_REASON_CHARS]
    return described


def _plain(info: Mapping[str, Any]) -> bool:
    for key, value in info.items():
        if type(key) is not str or not key.isascii():
            return False
        kind = type(value)
        if value is None or kind is bool:
            continue
        if kind is str:
            if not value.isascii():
                return False
        elif kind is int:
            if not -(2**63) <= value < 2**64:
                return False
        elif kind is not float or not math.isfinite(value):
            return False
    return isinstance(info, dict)


__all__ = ["counter_report", "model_info", "skill_entries"]
