"""The triggers' MQTT seam: each run's result on its own topic, and one HA event entity each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import jinja2
import yaml
from mqtt_harness import final, node
from triggers_harness import PROBE, Probe

from edge_agentd.protocol.wire import RunOutcome
from edge_agentd.service.triggers.mqttevents import (
    EVENT_TYPES,
    TriggerPublisher,
    trigger_event_configs,
)
from edge_agentd.skills.demo import SysfsTree
from scripts.testbed.mosquitto import Peer, broker, wait_for

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "scripts" / "examples" / "home-assistant-triggers.yaml"
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


# -- through a real Mosquitto ----------------------------------------------------------------


def test_a_firing_is_published_and_discovered_as_an_event(tmp_path: Path) -> None:
    sysfs = SysfsTree(tmp_path / "sys")
    probe = Probe(sysfs, -20.0)
    trigger = TRIGGER.format(probe=PROBE)
    with broker(tmp_path / "broker") as b:
        ha = Peer(b.port, subscribe=["homeassistant/event/#", "edge-agent/cellar-pi/trigger/#"])
        try:
            with node(
                tmp_path / "d",
                port=b.port,
                node="cellar-pi",
                replies=[
                    json.dumps({"skill_name": "read_sensor", "arguments": {"name": PROBE}}),
                    final("The freezer reads -4 °C."),
                ],
                extra=f'[skills]\nsysfs_root = "{sysfs.root}"\n{trigger}',
            ) as n:
                n.wait_link("connected")
                config = json.loads(
                    ha.on_topic("homeassistant/event/cellar-pi/trigger_freezer/config", 60).payload
                )
                assert config["state_topic"] == "edge-agent/cellar-pi/trigger/freezer"
                assert config["availability_topic"] == "edge-agent/cellar-pi/status"
                probe.set(-4.0)
                message = ha.on_topic("edge-agent/cellar-pi/trigger/freezer", 60)
                body = json.loads(message.payload)
                assert not message.retain
                assert body["event_type"] == "answered" and body["trigger"] == "freezer"
                assert body["answer"] == "The freezer reads -4 °C."
                assert body["reading"]["value"] == -4.0
                wait_for(
                    lambda: n.status()["mqtt"]["counters"].get("trigger_results") == 1, 30, "count"
                )
        finally:
            ha.close()
    # The Home Assistant example starts on exactly this message, by the entity or by the topic.
    event, topic = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["automation"]
    assert event["triggers"][0]["entity_id"] == "event.edge_agent_cellar_pi_trigger_freezer"
    attributes = {"trigger": {"to_state": {"attributes": body}}}
    assert render(event["conditions"][0]["value_template"], **attributes) == "True"
    assert render(event["actions"][0]["data"]["message"], **attributes) == body["answer"]
    assert render(event["actions"][0]["data"]["title"], **attributes) == "Freezer (-4.0 °C)"
    assert topic["triggers"][0]["topic"].startswith("edge-agent/cellar-pi/trigger/")
    assert (
        render(topic["actions"][0]["data"]["message"], trigger={"payload_json": body})
        == (body["answer"])
    )


def render(template: str, **variables: Any) -> str:
    return jinja2.Environment().from_string(template).render(**variables).strip()


TRIGGER = """
[[triggers]]
name = "freezer"
when = {{ skill = "read_sensor", arguments = {{ name = "{probe}" }}, above = -10.0, check_every = "1s" }}
query = "How warm is the freezer?"
"""
