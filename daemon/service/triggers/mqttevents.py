"""The triggers on MQTT: each trigger run's result on a topic of its own, and one Home Assistant
``event`` entity per trigger, so an HA automation can start on a firing.

This is the bridge's seam (the bridge is being split into parts): :class:`TriggerPublisher` is a
``TriggerRunner`` listener that publishes through the callable it is given, and
:func:`trigger_event_configs` builds the discovery configs with the bridge's common fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

EVENT_TYPES = ("answered", "max_iterations", "retries_exhausted", "interrupted", "internal")
"""A trigger run's outcomes: the ``event_type`` of the HA event entity."""


def trigger_topic(node_base: str, name: str) -> str:
    """``<prefix>/<node>/trigger/<name>``: the run results of one trigger (not retained)."""
    return f"{node_base}/trigger/{name}"


def trigger_payload(result: Mapping[str, Any]) -> bytes:
    """The JSON of one ``TriggerRun`` (docs/protocol.md, "`watch`"), with HA's ``event_type``."""
    body = {"event_type": result.get("outcome"), **result}
    return json.dumps(body, ensure_ascii=False, default=str).encode("utf-8")


def trigger_event_configs(
    names: Iterable[str],
    *,
    node_base: str,
    config_topic: Callable[[str, str], str],
    common: Callable[[str], dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Discovery topic -> config of one ``event`` entity per trigger; ``config_topic`` and
    ``common`` are the bridge's (``Discovery.config_topic``, ``Discovery._common``)."""
    configs = {}
    for name in names:
        object_id = f"trigger_{name}"
        configs[config_topic("event", object_id)] = {
            "name": f"Trigger {name}",
            "state_topic": trigger_topic(node_base, name),
            "event_types": list(EVENT_TYPES),
            "icon": "mdi:bell-ring-outline",
            **common(object_id),
        }
    return configs


class TriggerPublisher:
    """Publishes each trigger run's result: ``publish(topic, payload)`` must not block (the
    bridge's QoS 1 publish queues it)."""

    def __init__(self, node_base: str, publish: Callable[[str, bytes], None]) -> None:
        self._base = node_base
        self._publish = publish

    def __call__(self, result: Mapping[str, Any]) -> None:
        self._publish(trigger_topic(self._base, str(result["trigger"])), trigger_payload(result))


__all__ = [
    "EVENT_TYPES",
    "TriggerPublisher",
    "trigger_event_configs",
    "trigger_payload",
    "trigger_topic",
]
