"""Home Assistant MQTT discovery: one HA device per node, and the hardware readings behind it.

Each entity gets its own retained config on
``<discovery_prefix>/<component>/<node>/<object>/config`` (Home Assistant's single-component
discovery), every one tied to the node's retained status topic
for availability:

- ``text`` *Question*: what is typed in is asked; the answer lands on the *Answer* sensor;
- ``sensor`` *Answer*: the last answer, with its outcome, question and time as attributes;
- ``binary_sensor`` *Busy* (device class ``running``): on while the model works;
- one ``sensor`` per hardware reading the built-in sensor skills find (thermal zones, IIO
  temperature/humidity/pressure/illuminance, 1-Wire probes), with Home Assistant's device class,
  unit and ``state_class: measurement``.

Readings are taken by calling the registry's own skills (``list_sensors``, ``read_sensor``,
``cpu_temperature``) in-process, so the entities are exactly the sensors the model can read.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

from edge_agentd.agent.registry import Registry
from edge_agentd.protocol.mqttwire import OFFLINE, ONLINE, Topics
from edge_agentd.service.triggers.mqttevents import trigger_event_configs

log = logging.getLogger(__name__)

ANSWER_STATE_MAX_CHARS = 255
"""Home Assistant drops a state longer than this; the whole answer is in the attributes."""
QUESTION_MAX_CHARS = 255
"""The most an MQTT text entity allows (its ``max``)."""
DEVICE_MODEL_MAX_CHARS = 100
"""A model's name in a device's ``model`` is cut to this: the GGUF may say anything there."""

# Our quantity -> (Home Assistant sensor device class, the unit Home Assistant accepts for it).
# Home Assistant wants "%" for humidity where the skills say "%RH".
HA_SENSOR_CLASSES: dict[str, tuple[str, str]] = {
    "temperature": ("temperature", "°C"),
    "humidity": ("humidity", "%"),
    "pressure": ("atmospheric_pressure", "hPa"),
    "illuminance": ("illuminance", "lx"),
}
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def device_model(model: Mapping[str, Any]) -> str | None:
    """The model's own name for the Home Assistant device, from what ``status`` says of it: the
    GGUF's ``general.name`` ("Gemma 3 270m"), else its file's name; None while no model is
    loaded. Never the config's word for it (``default``, a path): that names no model."""
    for key in ("name", "path", "file"):
        text = model.get(key)
        if not isinstance(text, str):
            continue
        # The name is the GGUF's to say: only its printable characters, and a device's worth.
        said = text if key == "name" else PurePath(text).name
        shown = "".join(c for c in said if c.isprintable())
        if shown.strip():
            return shown.strip()[:DEVICE_MODEL_MAX_CHARS]
    return None


@dataclasses.dataclass(frozen=True)
class Reading:
    """One hardware reading as an entity: ``key`` is topic- and id-safe and stable."""

    key: str
    name: str
    quantity: str
    value: float


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_")[:80] or "sensor"


def collect_readings(registry: Registry) -> list[Reading]:
    """Every reading the built-in sensor skills give now; a sensor that fails is left out."""
    listing = registry.get("list_sensors")
    reader = registry.get("read_sensor")
    if listing is None or reader is None:
        return []
    try:
        sensors = registry.call(listing, {}).get("sensors", [])
    except Exception as exc:  # noqa: BLE001 - a sensor's failure is only logged
        log.debug("list_sensors failed: %s", exc)
        return []
    cpu_sensor = None
    cpu = registry.get("cpu_temperature")
    if cpu is not None:
        try:
            cpu_sensor = registry.call(cpu, {}).get("sensor")
        except Exception as exc:  # noqa: BLE001 - a sensor's failure is only logged
            log.debug("cpu_temperature failed: %s", exc)
    readings: list[Reading] = []
    taken: set[str] = set()
    for sensor in sensors:
        name = str(sensor.get("name", ""))
        try:
            values = registry.call(reader, {"name": name}).get("readings", [])
        except Exception as exc:  # noqa: BLE001 - a sensor's failure is only logged
            log.debug("read_sensor(%s) failed: %s", name, exc)
            continue
        for value in values:
            quantity = value.get("quantity")
            number = value.get("value")
            if quantity not in HA_SENSOR_CLASSES or not isinstance(number, int | float):
                continue
            key = _safe(f"{name}_{quantity}")
            if key in taken:
                key = _safe(f"{name}_{value.get('channel') or quantity}_{len(taken)}")
            taken.add(key)
            if name == cpu_sensor and quantity == "temperature":
                title = "CPU temperature"
            else:
                title = f"{sensor.get('label') or name} {quantity}"
            readings.append(Reading(key, title, str(quantity), float(number)))
    return readings


@dataclasses.dataclass(frozen=True)
class Discovery:
    """Builds the retained discovery configs of one node."""

    topics: Topics
    discovery_prefix: str
    version: str
    model: str | None
    """The model's own name (:func:`device_model`), or None until one is loaded."""
    sensor_interval_s: float
    triggers: tuple[str, ...] = ()
    """The daemon's enabled triggers: one ``event`` entity each (docs/mqtt.md, "Triggers")."""

    @property
    def node(self) -> str:
        return self.topics.node

    def config_topic(self, component: str, object_id: str) -> str:
        return f"{self.discovery_prefix}/{component}/{self.node}/{object_id}/config"

    @property
    def config_subscription(self) -> str:
        """Every retained config this node may have left, whatever the component."""
        return f"{self.discovery_prefix}/+/{self.node}/+/config"

    def _unique(self, object_id: str) -> str:
        return f"edge_agent_{_safe(self.node)}_{object_id}"

    def _common(self, object_id: str) -> dict[str, Any]:
        return {
            "unique_id": self._unique(object_id),
            "availability_topic": self.topics.status,
            "payload_available": ONLINE,
            "payload_not_available": OFFLINE,
            "device": {
                "identifiers": [f"edge_agent_{_safe(self.node)}"],
                "name": f"edge-agent {self.node}",
                "manufacturer": "edge-agent",
                **({"model": self.model} if self.model else {}),
                "sw_version": self.version,
            },
            "origin": {"name": "edge-agent", "sw_version": self.version},
            "qos": 1,
        }

    def configs(self, readings: Iterable[Reading]) -> dict[str, dict[str, Any]]:
        """Discovery topic -> config, for the fixed entities and each reading."""
        out: dict[str, dict[str, Any]] = {}
        out[self.config_topic("text", "question")] = {
            "name": "Question",
            **self._common("question"),
            "command_topic": self.topics.question,
            "state_topic": f"{self.topics.question}/state",
            "min": 1,
            "max": QUESTION_MAX_CHARS,
            "mode": "text",
            "retain": False,
            "icon": "mdi:chat-question",
        }
        out[self.config_topic("sensor", "answer")] = {
            "name": "Answer",
            **self._common("answer"),
            "state_topic": self.topics.answer,
            "json_attributes_topic": self.topics.answer_attributes,
            "icon": "mdi:robot",
        }
        out[self.config_topic("binary_sensor", "busy")] = {
            "name": "Busy",
            **self._common("busy"),
            "state_topic": self.topics.busy,
            "payload_on": "ON",
            "payload_off": "OFF",
            "device_class": "running",
        }
        for reading in readings:
            device_class, unit = HA_SENSOR_CLASSES[reading.quantity]
            object_id = f"sensor_{reading.key}"
            out[self.config_topic("sensor", object_id)] = {
                "name": reading.name,
                **self._common(object_id),
                "state_topic": self.topics.sensor(reading.key),
                "device_class": device_class,
                "unit_of_measurement": unit,
                "state_class": "measurement",
                "suggested_display_precision": 1,
                # A reading not refreshed for three intervals shows as unavailable.
                "expire_after": max(1, round(3 * self.sensor_interval_s)),
            }
        out.update(
            trigger_event_configs(
                self.triggers,
                node_base=self.topics.base,
                config_topic=self.config_topic,
                common=self._common,
            )
        )
        return out


def encode_config(config: dict[str, Any]) -> bytes:
    return json.dumps(config, ensure_ascii=False, sort_keys=True).encode("utf-8")


__all__ = [
    "ANSWER_STATE_MAX_CHARS",
    "HA_SENSOR_CLASSES",
    "Discovery",
    "Reading",
    "collect_readings",
    "device_model",
    "encode_config",
]
