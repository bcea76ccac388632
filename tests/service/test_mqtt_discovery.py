"""Home Assistant discovery against a real Mosquitto, checked field by field against the schema
Home Assistant documents for each MQTT entity type.

The tables below are transcribed from Home Assistant's documentation of MQTT discovery
(home-assistant.io/integrations/mqtt/, text.mqtt/, sensor.mqtt/, binary_sensor.mqtt/, and the
sensor/binary_sensor device-class pages): every key a config may hold, its type, the values an
enumerated key accepts, and the units each sensor device class accepts.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("paho.mqtt")

from mqtt_harness import node
from tiny_gguf import build_gemma4_gguf

from edge_agentd.skills.demo import SysfsTree, w1_slave_text
from scripts.testbed.mosquitto import MOSQUITTO, Peer, broker, wait_for

pytestmark = pytest.mark.skipif(
    MOSQUITTO is None, reason="needs Debian's mosquitto (make deps installs it)"
)

# -- Home Assistant's documented schema ---------------------------------------------------------

STR, INT, BOOL, MAP, LIST = str, int, bool, dict, list
# Options every MQTT entity documents (availability, device, naming, attributes, qos...).
COMMON: dict[str, Any] = {
    "availability": LIST,
    "availability_mode": STR,
    "availability_template": STR,
    "availability_topic": STR,
    "default_entity_id": STR,
    "device": MAP,
    "enabled_by_default": BOOL,
    "encoding": STR,
    "entity_category": STR,
    "entity_picture": STR,
    "icon": STR,
    "json_attributes_template": STR,
    "json_attributes_topic": STR,
    "name": STR,
    "object_id": STR,
    "origin": MAP,
    "payload_available": STR,
    "payload_not_available": STR,
    "platform": STR,
    "qos": INT,
    "unique_id": STR,
}
SCHEMA: dict[str, dict[str, Any]] = {
    "text": {
        **COMMON,
        "command_template": STR,
        "command_topic": STR,
        "max": INT,
        "min": INT,
        "mode": STR,
        "pattern": STR,
        "retain": BOOL,
        "state_topic": STR,
        "value_template": STR,
    },
    "sensor": {
        **COMMON,
        "device_class": STR,
        "expire_after": INT,
        "force_update": BOOL,
        "last_reset_value_template": STR,
        "options": LIST,
        "state_class": STR,
        "state_topic": STR,
        "suggested_display_precision": INT,
        "unit_of_measurement": STR,
        "value_template": STR,
    },
    "binary_sensor": {
        **COMMON,
        "device_class": STR,
        "expire_after": INT,
        "force_update": BOOL,
        "off_delay": INT,
        "payload_off": STR,
        "payload_on": STR,
        "state_topic": STR,
        "value_template": STR,
    },
}
REQUIRED = {"text": {"command_topic"}, "sensor": {"state_topic"}, "binary_sensor": {"state_topic"}}
DEVICE_KEYS = {
    "configuration_url",
    "connections",
    "hw_version",
    "identifiers",
    "manufacturer",
    "model",
    "model_id",
    "name",
    "serial_number",
    "suggested_area",
    "sw_version",
    "via_device",
}
ORIGIN_KEYS = {"name", "sw_version", "support_url"}
STATE_CLASSES = {"measurement", "measurement_angle", "total", "total_increasing"}
SENSOR_UNITS = {
    "temperature": {"°C", "°F", "K"},
    "humidity": {"%"},
    "atmospheric_pressure": {"cbar", "bar", "hPa", "mmHg", "inHg", "kPa", "mbar", "Pa", "psi"},
    "pressure": {"cbar", "bar", "hPa", "mmHg", "inHg", "kPa", "mbar", "Pa", "psi"},
    "illuminance": {"lx"},
}
BINARY_SENSOR_CLASSES = {
    "battery",
    "battery_charging",
    "carbon_monoxide",
    "cold",
    "connectivity",
    "door",
    "garage_door",
    "gas",
    "heat",
    "light",
    "lock",
    "moisture",
    "motion",
    "moving",
    "occupancy",
    "opening",
    "plug",
    "power",
    "presence",
    "problem",
    "running",
    "safety",
    "smoke",
    "sound",
    "tamper",
    "update",
    "vibration",
    "window",
}
DISCOVERY_TOPIC = re.compile(
    r"homeassistant/(text|sensor|binary_sensor)/([A-Za-z0-9_-]+)/([A-Za-z0-9_-]+)/config"
)
TOPIC_SAFE = re.compile(r"[^#+\0]+")


def check_config(topic: str, config: dict[str, Any], status_topic: str) -> str:
    """Every field of one discovery config against the documented schema; returns the component."""
    match = DISCOVERY_TOPIC.fullmatch(topic)
    assert match, f"{topic}: not <prefix>/<component>/<node_id>/<object_id>/config"
    component = match.group(1)
    schema = SCHEMA[component]
    for key, value in config.items():
        assert key in schema, f"{topic}: {key!r} is not a documented {component} option"
        assert isinstance(value, schema[key]), f"{topic}: {key} should be {schema[key].__name__}"
    assert REQUIRED[component] <= set(config), f"{topic}: a required option is missing"
    for key in ("command_topic", "state_topic", "json_attributes_topic", "availability_topic"):
        if key in config:
            assert TOPIC_SAFE.fullmatch(config[key]), f"{topic}: {key} must be a plain topic"
    # Availability is the node's retained status, with our payloads.
    assert config["availability_topic"] == status_topic
    assert (config["payload_available"], config["payload_not_available"]) == ("online", "offline")
    assert config["qos"] in (0, 1, 2)
    # A device needs identifiers (or connections), and an entity tied to one needs unique_id.
    assert set(config["device"]) <= DEVICE_KEYS
    assert config["device"]["identifiers"] and config["unique_id"]
    assert set(config["origin"]) <= ORIGIN_KEYS and config["origin"]["name"]
    if component == "text":
        assert config["mode"] in ("text", "password")
        assert 0 <= config["min"] <= config["max"] <= 255
    if component == "sensor" and "device_class" in config:
        device_class = config["device_class"]
        assert device_class in SENSOR_UNITS, f"{topic}: device_class {device_class}"
        assert config["unit_of_measurement"] in SENSOR_UNITS[device_class]
        assert config["state_class"] in STATE_CLASSES
        assert config["expire_after"] > 0 and config["suggested_display_precision"] >= 0
    if component == "sensor" and "device_class" not in config:
        # A text sensor (the answer): no unit and no state class, or HA expects numbers.
        assert "unit_of_measurement" not in config and "state_class" not in config
    if component == "binary_sensor":
        assert config.get("device_class") in BINARY_SENSOR_CLASSES
    return component


def make_sysfs(root: Path) -> Path:
    fake = SysfsTree(root)
    fake.thermal_zone(0, "cpu-thermal", "48312")
    fake.iio_device(
        0,
        "bme280",
        {
            "in_temp_input": "21500",
            "in_humidityrelative_input": "45200",
            "in_pressure_input": "101.325",
        },
    )
    fake.w1_probe("28-0316a2796eff", w1_slave_text(19250))
    return root


def retained_configs(peer: Peer, node_id: str, count: int) -> dict[str, dict[str, Any]]:
    configs: dict[str, dict[str, Any]] = {}

    def enough() -> bool:
        for message in peer.quiet(0.2):
            if f"/{node_id}/" in message.topic and message.topic.endswith("/config"):
                if message.payload:
                    configs[message.topic] = json.loads(message.payload)
                else:
                    configs.pop(message.topic, None)
        return len(configs) >= count

    wait_for(enough, 60, f"{count} discovery configs of {node_id}")
    return configs


@pytest.fixture(scope="module")
def ha_broker(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with broker(tmp_path_factory.mktemp("broker")) as b:
        yield b


def test_discovery_configs_match_home_assistants_schema(ha_broker: Any, tmp_path: Path) -> None:
    sysfs = make_sysfs(tmp_path / "sys")
    ha = Peer(ha_broker.port, subscribe=["homeassistant/#", "edge-agent/greenhouse/#"])
    try:
        with node(
            tmp_path / "d",
            port=ha_broker.port,
            node="greenhouse",
            extra=f'[skills]\nsysfs_root = "{sysfs}"\n',
        ) as n:
            n.wait_link("connected")
            # question, answer, busy + CPU + BME280 (3) + 1-Wire probe
            configs = retained_configs(ha, "greenhouse", 8)
            components = [
                check_config(topic, config, "edge-agent/greenhouse/status")
                for topic, config in configs.items()
            ]
            assert sorted(components) == [
                "binary_sensor",
                "sensor",
                "sensor",
                "sensor",
                "sensor",
                "sensor",
                "sensor",
                "text",
            ]
            assert len({c["unique_id"] for c in configs.values()}) == len(configs)
            assert len({json.dumps(c["device"], sort_keys=True) for c in configs.values()}) == 1
            by_class: dict[str, list[dict[str, Any]]] = {}
            for config in configs.values():
                by_class.setdefault(config.get("device_class", "-"), []).append(config)
            assert len(by_class["temperature"]) == 3
            assert {c["name"] for c in by_class["temperature"]} >= {"CPU temperature"}
            assert by_class["humidity"][0]["unit_of_measurement"] == "%"
            assert by_class["atmospheric_pressure"][0]["unit_of_measurement"] == "hPa"
            # The states the sensors point at are numbers Home Assistant can read.
            values = {}
            for config in configs.values():
                if "device_class" in config and config.get("state_class"):
                    message = ha.on_topic(config["state_topic"], 60)
                    values[config["name"]] = float(message.payload)
            assert values["CPU temperature"] == pytest.approx(48.312)
            assert sorted(values.values()) == pytest.approx(
                sorted([48.312, 21.5, 45.2, 1013.25, 19.25])
            )

            # The text entity asks; the answer sensor and its attributes get the result.
            question = next(c for t, c in configs.items() if t.startswith("homeassistant/text/"))
            ha.publish(question["command_topic"], "Is the greenhouse warm?")
            answer_config = next(c for t, c in configs.items() if t.endswith("/answer/config"))
            answer = ha.on_topic(answer_config["state_topic"], 60)
            assert answer.payload.decode() == "I cannot tell: fine."
            attributes = json.loads(ha.on_topic(answer_config["json_attributes_topic"]).payload)
            assert attributes["outcome"] == "answered"
            assert attributes["question"] == "Is the greenhouse warm?"
            assert attributes["time"].endswith("+00:00")
            late = Peer(ha_broker.port, subscribe=[answer_config["state_topic"]])
            try:  # retained: a Home Assistant that starts later still sees the last answer
                kept = late.on_topic(answer_config["state_topic"], 30)
                assert kept.retain and kept.payload == b"I cannot tell: fine."
            finally:
                late.close()
            busy = next(c for c in configs.values() if c.get("device_class") == "running")
            assert ha.on_topic(busy["state_topic"]).payload in (b"ON", b"OFF")

            # Home Assistant restarts: its birth message brings every config back.
            for topic in configs:
                ha.publish(topic, b"", retain=True)
            ha.seen.clear()
            ha.publish("homeassistant/status", "online")
            again = retained_configs(ha, "greenhouse", 8)
            # The same configs; the device's model may have been named meanwhile (published
            # without it while the model loads: the next test's), so that field is set aside.
            assert without_model(again) == without_model(configs)
            wait_for(lambda: n.status()["mqtt"]["counters"].get("ha_births") == 1, 30, "birth")
    finally:
        ha.close()


def without_model(configs: dict[str, Any]) -> dict[str, Any]:
    """``configs`` with each device's ``model`` left out."""
    return {
        topic: {
            **config,
            "device": {k: v for k, v in config.get("device", {}).items() if k != "model"},
        }
        for topic, config in configs.items()
    }


def test_discovery_off_clears_what_was_published(ha_broker: Any, tmp_path: Path) -> None:
    watcher = Peer(ha_broker.port, subscribe=["homeassistant/+/shed/+/config"])
    try:
        with node(tmp_path / "on", port=ha_broker.port, node="shed") as n:
            n.wait_link("connected")
            published = retained_configs(watcher, "shed", 3)
        watcher.seen.clear()
        with node(
            tmp_path / "off", port=ha_broker.port, node="shed", mqtt="discovery = false"
        ) as n:
            n.wait_link("connected")
            wait_for(
                lambda: (
                    {m.topic for m in watcher.quiet(0.2) if not m.payload} >= set(published)
                    or {m.topic for m in watcher.seen if not m.payload} >= set(published)
                ),
                60,
                "every config cleared",
            )
        late = Peer(ha_broker.port, subscribe=["homeassistant/+/shed/+/config"])
        try:
            assert not [m for m in late.quiet(1.5) if m.payload], "a retained config survived"
        finally:
            late.close()
    finally:
        watcher.close()


def test_ha_discovery_print_shows_the_configs(tmp_path: Path) -> None:
    sysfs = make_sysfs(tmp_path / "sys")
    config = tmp_path / "edge.toml"
    config.write_text(
        f'[skills]\nsysfs_root = "{sysfs}"\n[mqtt]\nhost = "broker.lan"\nnode_id = "attic"\n'
    )
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "edge_agentd.cli",
            "ha-discovery",
            "--print",
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    configs = json.loads(shown.stdout)
    assert len(configs) == 8
    for topic, entry in configs.items():
        check_config(topic, entry, "edge-agent/attic/status")
    bad = tmp_path / "bad.toml"
    bad.write_text('[mqtt]\nnode_id = "at tic"\n')
    refused = subprocess.run(
        [sys.executable, "-m", "edge_agentd.cli", "ha-discovery", "--print", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 78 and "node_id" in refused.stderr


def test_forget_clears_everything_a_stopped_node_left(ha_broker: Any, tmp_path: Path) -> None:
    # The way to take a node off the broker once [mqtt] is gone from its config: the daemon
    # without [mqtt] no longer knows the broker, so the client clears what the node left.
    everything = ["homeassistant/+/barn/+/config", "edge-agent/barn/#"]
    watcher = Peer(ha_broker.port, subscribe=everything)
    cli = [
        sys.executable,
        "-m",
        "edge_agentd.cli",
        "nodes",
        "--mqtt",
        f"127.0.0.1:{ha_broker.port}",
    ]

    def nodes(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*cli, *args], capture_output=True, text=True, timeout=60, check=False
        )

    try:
        with node(tmp_path / "on", port=ha_broker.port, node="barn") as n:
            n.wait_link("connected")
            published = retained_configs(watcher, "barn", 3)
            watcher.publish("edge-agent/barn/question", "Anyone in the barn?")
            watcher.on_topic("edge-agent/barn/answer/attributes", 60)
            # A running node would publish it all again: refused, and nothing is cleared.
            online = nodes("--forget", "barn")
            assert online.returncode == 75 and "online" in online.stderr, online.stderr
            assert n.status()["mqtt"]["link"] == "connected"
        watcher.on_topic("edge-agent/barn/status", 60, payload=lambda p: p == b"offline")

        forgot = nodes("--forget", "barn", "--json")
        assert forgot.returncode == 0, forgot.stderr
        cleared = set(json.loads(forgot.stdout)["cleared"])
        assert set(published) <= cleared
        assert {
            "edge-agent/barn/status",
            "edge-agent/barn/info",
            "edge-agent/barn/busy",
            "edge-agent/barn/answer",
            "edge-agent/barn/answer/attributes",
            "edge-agent/barn/question/state",
        } <= cleared
        late = Peer(ha_broker.port, subscribe=everything)
        try:
            left = [m.topic for m in late.quiet(1.5) if m.payload]
            assert not left, f"retained after --forget: {left}"
        finally:
            late.close()
        listing = nodes("--all", "--json")
        assert listing.returncode == 0 and "barn" not in {
            e["node"] for e in json.loads(listing.stdout)
        }
        again = nodes("--forget", "barn")
        assert again.returncode == 0 and "nothing retained" in again.stdout
        assert nodes("--forget", "ba rn").returncode == 65
    finally:
        watcher.close()


# -- the device names the model by its own name ---------------------------------------------------


def test_the_device_names_the_loaded_models_own_name_never_the_config_word(
    ha_broker: Any, tmp_path: Path
) -> None:
    gguf = build_gemma4_gguf(tmp_path / "tiny.gguf")  # general.name "tiny-gemma4-test"
    ha = Peer(ha_broker.port, subscribe=["homeassistant/+/lab-pi/+/config"])
    info = Peer(ha_broker.port, subscribe=["edge-agent/lab-pi/info"])
    try:
        # Plain: its first step asks the model, so a run moves its cache (guided, the tiny
        # model's noise may answer from the engine's sentences alone).
        plain = '[model]\nstrategy = "plain"\n'
        with node(
            tmp_path / "d", port=ha_broker.port, node="lab-pi", model=str(gguf), extra=plain
        ) as n:
            n.wait_link("connected")
            latest: dict[str, dict[str, Any]] = {}

            def named_by_the_model() -> bool:
                for message in ha.quiet(0.2):
                    latest[message.topic] = json.loads(message.payload) if message.payload else {}
                models = {c.get("device", {}).get("model") for c in latest.values()}
                return len(latest) >= 3 and models == {"tiny-gemma4-test"}

            # Published at once, without a model while it loads; again when it has loaded.
            wait_for(named_by_the_model, 60, f"configs naming the model (last: {latest})")
            devices = [config["device"] for config in latest.values()]
            assert {device.get("model") for device in devices} == {"tiny-gemma4-test"}
            # The version is this project's own, found under its distribution's name.
            assert {device["sw_version"] for device in devices} == {version("edge-agentd")}
            # Whatever was published while the model loaded never named the path.
            named = {
                json.loads(m.payload)["device"].get("model") for m in ha.seen if m.payload
            }
            assert named <= {"tiny-gemma4-test", None}, named
            # A run changes the model's counters (its cache), not its name: the node's info says
            # the new counters, and no config is published again.
            cached = n.status()["model"]["cached_tokens"]
            ha.seen.clear()
            asked = n.request({"v": 1, "id": "r1", "op": "run", "query": "hi"}, timeout=120)
            assert asked["kind"] == "result", asked
            assert n.status()["model"]["cached_tokens"] != cached
            info.wait(
                lambda m: (json.loads(m.payload).get("model") or {}).get("cached_tokens")
                not in (None, cached),
                60,
            )
            again = [m.topic for m in ha.quiet(1.0) + ha.seen if m.payload]
            assert not again, f"configs published again: {again}"
    finally:
        ha.close()
        info.close()


def test_device_model_is_the_models_name_else_its_file_else_none() -> None:
    from edge_agentd.service.mqtt.discovery import device_model

    assert device_model({"spec": "default"}) is None  # still loading: no name yet
    loaded = {"spec": "default", "name": "Gemma 3 270m", "path": "/c/gemma-3-270m.gguf"}
    assert device_model(loaded) == "Gemma 3 270m"
    assert device_model({"spec": "/m/x.gguf", "name": None, "path": "/m/x.gguf"}) == "x.gguf"
    assert device_model({"spec": "mock:/t/replies.json", "kind": "mock",
                         "file": "/t/replies.json"}) == "replies.json"
    # A GGUF may say anything in its name: a device gets its printable start.
    assert device_model({"name": "Gemma\x1b[2J\n 3" + "x" * 500}) == "Gemma[2J 3" + "x" * 90
    assert device_model({"name": "\x00\n", "path": "/m/y.gguf"}) == "y.gguf"


def test_ha_discovery_print_names_the_models_own_name(tmp_path: Path) -> None:
    gguf = build_gemma4_gguf(tmp_path / "tiny.gguf")
    shown = {}
    for name, model in (("tiny", str(gguf)), ("embedded", "default")):
        config = tmp_path / f"{name}.toml"
        config.write_text(f'[model]\npath = "{model}"\n[mqtt]\nhost = "h"\nnode_id = "attic"\n')
        printed = subprocess.run(
            [sys.executable, "-m", "edge_agentd.cli", "ha-discovery", "--print", "--config",
             str(config)],
            capture_output=True, text=True, timeout=120, check=False,
        )
        assert printed.returncode == 0, printed.stderr
        shown[name] = {c["device"].get("model") for c in json.loads(printed.stdout).values()}
    assert shown["tiny"] == {"tiny-gemma4-test"}
    assert shown["embedded"] == {"Gemma 3 270m"}
