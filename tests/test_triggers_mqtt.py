"""The triggers' MQTT seam: each run's result on its own topic, and one HA event entity each."""

from __future__ import annotations

import json
from typing import Any, get_args

from edge_agent.protocol.wire import RunOutcome
from edge_agent.service.triggers.mqttevents import (
    EVENT_TYPES,
    TriggerPublisher,
    trigger_event_configs,
)

RESULT = {
    "type": "TriggerRun",
    "trigger": "freezer",
    "run_id": "freezer-1",
    "fired_at": "2026-07-01T12:05:00+02:00",
    "outcome": "answered",
    "answer": "The freezer probe reads -8.5 °C.",
    "reading": {"skill": "read_sensor", "arguments": {"name": "p"}, "value": -8.5, "unit": "°C"},
}


def test_each_result_is_published_on_its_triggers_topic_with_an_event_type() -> None:
    sent: list[tuple[str, bytes]] = []
    TriggerPublisher("edge-agent/kitchen-pi", lambda topic, payload: sent.append((topic, payload)))(
        RESULT
    )
    ((topic, payload),) = sent
    assert topic == "edge-agent/kitchen-pi/trigger/freezer"
    body = json.loads(payload)
    assert body["event_type"] == "answered" and body["answer"] == RESULT["answer"]
    assert body["reading"]["value"] == -8.5


def test_one_event_entity_per_trigger_for_every_outcome() -> None:
    def common(object_id: str) -> dict[str, Any]:
        return {"unique_id": f"edge_agent_kitchen_pi_{object_id}", "availability_topic": "s"}

    configs = trigger_event_configs(
        ["freezer", "morning"],
        node_base="edge-agent/kitchen-pi",
        config_topic=lambda component, object_id: (
            f"homeassistant/{component}/kp/{object_id}/config"
        ),
        common=common,
    )
    assert list(configs) == [
        "homeassistant/event/kp/trigger_freezer/config",
        "homeassistant/event/kp/trigger_morning/config",
    ]
    freezer = configs["homeassistant/event/kp/trigger_freezer/config"]
    assert freezer["state_topic"] == "edge-agent/kitchen-pi/trigger/freezer"
    assert freezer["unique_id"] == "edge_agent_kitchen_pi_trigger_freezer"
    assert set(EVENT_TYPES) == {*get_args(RunOutcome), "internal"}
    assert freezer["event_types"] == list(EVENT_TYPES)
