"""The MQTT examples in scripts/examples/, run against a real Mosquitto and a real mock daemon.

The Home Assistant automation's templates are rendered with jinja2 as Home Assistant renders them
(with its ``to_json`` filter and ``now()``), the payload it publishes goes to the broker, and the
reply that comes back is fed to the answering automation. The Node-RED flow's function node runs
in Node.js when it is there, its output goes out as the mqtt out node sends it, and the reply is
routed by the flow's switch node.
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

pytest.importorskip("paho.mqtt")

from mqtt_harness import final, node

from edge_agentd.skills.demo import SysfsTree
from scripts.testbed.mosquitto import MOSQUITTO, Peer, broker

pytestmark = pytest.mark.skipif(
    MOSQUITTO is None, reason="needs Debian's mosquitto (make deps installs it)"
)

EXAMPLES = Path(__file__).resolve().parents[2] / "scripts" / "examples"
ANSWER = "Yes, open the vents: it is 31 °C."
READ_CPU = json.dumps({"skill_name": "cpu_temperature", "arguments": {}})


def warm_cpu(directory: Path) -> str:
    """A ``[skills]`` section whose CPU reads 31 °C: the answer states what a result holds."""
    SysfsTree(directory / "sys").thermal_zone(0, temp="31000")
    return f'[skills]\nsysfs_root = "{directory / "sys"}"\n'



def render(template: str, **variables: Any) -> str:
    environment = jinja2.Environment()
    environment.filters["to_json"] = lambda value: json.dumps(value, ensure_ascii=False)
    environment.globals["now"] = lambda: datetime.datetime.now(datetime.UTC)
    return environment.from_string(template).render(**variables).strip()


@pytest.fixture(scope="module")
def example_broker(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with broker(tmp_path_factory.mktemp("broker")) as b:
        yield b


def test_home_assistant_automation_asks_and_notifies(example_broker: Any, tmp_path: Path) -> None:
    config = yaml.safe_load((EXAMPLES / "home-assistant-mqtt.yaml").read_text())
    ask_automation, answer_automation = config["automation"]
    (publish,) = ask_automation["actions"]
    assert publish["action"] == "mqtt.publish" and publish["data"]["retain"] is False
    (reply_trigger,) = answer_automation["triggers"]
    assert reply_trigger["trigger"] == "mqtt"
    node_name = publish["data"]["topic"].split("/")[1]
    home_assistant = Peer(example_broker.port, v5=False, subscribe=[reply_trigger["topic"]])
    try:
        with node(
            tmp_path / "d", port=example_broker.port, node=node_name,
            replies=[READ_CPU, final(ANSWER)],
            extra='[workflows.vents]\ninstructions = "x"\n' + warm_cpu(tmp_path),
        ) as n:
            n.wait_link("connected")
            payload = render(publish["data"]["payload"])
            ask = json.loads(payload)
            assert ask["reply_to"] == reply_trigger["topic"]
            home_assistant.publish(publish["data"]["topic"], payload, qos=publish["data"]["qos"])
            reply = home_assistant.on_topic(reply_trigger["topic"], 60)
            trigger = {"payload_json": json.loads(reply.payload)}
            assert trigger["payload_json"]["id"] == ask["id"]
            (condition,) = answer_automation["conditions"]
            assert render(condition["value_template"], trigger=trigger) == "True"
            (branch,) = answer_automation["actions"]
            assert render(branch["if"][0]["value_template"], trigger=trigger) == "True"
            notify = branch["then"][0]
            assert render(notify["data"]["message"], trigger=trigger) == ANSWER
            assert render(notify["data"]["title"], trigger=trigger) == f"edge-agent {node_name}"

            # A failure takes the other branch, with the protocol's code in the notification.
            bad = dict(ask, workflow="no-such-workflow", id="bad-1")
            home_assistant.publish(publish["data"]["topic"], json.dumps(bad))
            failed = home_assistant.wait(lambda m: json.loads(m.payload).get("id") == "bad-1", 60)
            trigger = {"payload_json": json.loads(failed.payload)}
            assert render(branch["if"][0]["value_template"], trigger=trigger) == "False"
            message = render(branch["else"][0]["data"]["message"], trigger=trigger)
            assert message.startswith("bad_request:")
    finally:
        home_assistant.close()


def _run_function(func: str, msg: dict[str, Any]) -> dict[str, Any]:
    """A Node-RED function node: the body of ``function (msg) { ... }``, in Node.js."""
    script = (
        f"const msg = {json.dumps(msg)};\n"
        f"const out = (function (msg) {{\n{func}\n}})(msg);\n"
        "process.stdout.write(JSON.stringify(out));\n"
    )
    result = subprocess.run(
        [shutil.which("node") or "node", "-e", script],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_node_red_flow_asks_and_routes_the_reply(example_broker: Any, tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("needs Node.js to run the flow's function node")
    nodes = {
        entry["id"]: entry
        for entry in json.loads((EXAMPLES / "node-red-mqtt-flow.json").read_text())
    }
    for entry in nodes.values():
        for output in entry.get("wires", []):
            assert all(target in nodes for target in output), entry["id"]
    inject = next(e for e in nodes.values() if e["type"] == "inject")
    (make_ask,) = [nodes[t] for t in inject["wires"][0]]
    (mqtt_out,) = [nodes[t] for t in make_ask["wires"][0]]
    mqtt_in = next(e for e in nodes.values() if e["type"] == "mqtt in")
    switch = nodes[mqtt_in["wires"][0][0]]
    assert nodes[mqtt_out["broker"]]["type"] == "mqtt-broker"
    assert mqtt_out["retain"] == "false" and mqtt_in["datatype"] == "json"
    node_name = mqtt_out["topic"].split("/")[1]
    node_red = Peer(example_broker.port, v5=False, subscribe=[mqtt_in["topic"]])
    try:
        with node(
            tmp_path / "d", port=example_broker.port, node=node_name,
            replies=[READ_CPU, final(ANSWER)],
            daemon="queue_limit = 1", extra=warm_cpu(tmp_path),
        ) as n:
            n.wait_link("connected")
            msg = _run_function(make_ask["func"], {"payload": inject["payload"], "_msgid": "m1"})
            # The mqtt out node sends an object payload as its JSON.
            node_red.publish(
                mqtt_out["topic"], json.dumps(msg["payload"]), qos=int(mqtt_out["qos"])
            )
            reply = json.loads(node_red.on_topic(mqtt_in["topic"], 60).payload)
            assert reply["id"] == "m1"
            routed = _switch(switch, reply)
            assert routed["rules"][0]["to"] == "payload.answer"
            assert reply["answer"] == ANSWER
            error = {"kind": "error", "code": "busy", "message": "later"}
            assert _switch(switch, error)["rules"][0]["to"] == "payload.code"
    finally:
        node_red.close()


def _switch(switch: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Where Node-RED's switch node sends a message (first matching rule, checkall false)."""
    assert switch["property"] == "payload.kind" and switch["checkall"] == "false"
    for index, rule in enumerate(switch["rules"]):
        if rule["t"] == "eq" and payload.get("kind") == rule["v"]:
            return _lookup(switch["wires"][index][0])
    raise AssertionError(f"kind {payload.get('kind')} goes nowhere")


def _lookup(node_id: str) -> dict[str, Any]:
    flow = json.loads((EXAMPLES / "node-red-mqtt-flow.json").read_text())
    found: dict[str, Any] = next(e for e in flow if e["id"] == node_id)
    return found
