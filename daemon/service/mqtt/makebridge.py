"""The bridge made from the ``[mqtt]`` section (or a config error naming what is missing), and the
discovery it would publish (``edge-agent ha-discovery`` prints it: edge_agentd.cli.mqtt).

Apart from the bridge itself (mqtt/bridge.py), which imports paho: ``serve`` without ``[mqtt]``,
and ``ha-discovery``, never need it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edge_agentd.agent.registry import Registry
from edge_agentd.protocol.version import package_version
from edge_agentd.service.config.mqtt import MqttSettings, read_password
from edge_agentd.service.config.settings import ConfigError, Settings

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from edge_agentd.service.mqtt.bridge import MqttBridge


def mqtt_settings(settings: Settings) -> MqttSettings | None:
    """The ``[mqtt]`` section when it is present and enabled."""
    section = settings.mqtt
    if section is not None and section.enabled:
        return section
    return None


def make_bridge(settings: Settings, registry: Registry) -> MqttBridge | None:
    """The bridge the config asks for (None when ``[mqtt]`` is absent or off), ready to
    :meth:`~MqttBridge.start` once the daemon is bound; ConfigError for what it cannot do."""
    section = mqtt_settings(settings)
    if section is None:
        return None
    try:
        from edge_agentd.service.mqtt.bridge import MqttBridge  # noqa: PLC0415 - optional extra
    except ImportError as exc:
        raise ConfigError(
            f"[mqtt] needs the mqtt extra: pip install 'paho-mqtt>=2.1' ({exc})"
        ) from None
    try:
        password = read_password(section)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return MqttBridge(
            section,
            registry=registry,
            max_request_bytes=settings.daemon.max_request_bytes,
            password=password,
        )
    except OSError as exc:  # ssl.SSLError included: a CA, cert or key that cannot be loaded
        # The message names the file and the problem, never the key's content.
        raise ConfigError(f"mqtt: cannot set up TLS: {exc}") from None


def configured_model_name(spec: str) -> str | None:
    """The name the model of ``spec`` (``default``, a GGUF path, ``mock:FILE``) would have once
    loaded, as the daemon's discovery names it, read from the file's header without loading it:
    None when the file cannot be read (the daemon would not start either)."""
    from edge_agentd.model.gguf import ModelLoadError, read_gguf  # noqa: PLC0415
    from edge_agentd.service.mqtt.discovery import device_model  # noqa: PLC0415

    if spec.startswith("mock:"):
        return device_model({"file": spec[len("mock:") :]})
    try:
        if spec == "default":
            from edge_agentd.model.embedded import default_model_path  # noqa: PLC0415

            path, _ = default_model_path()
        else:
            path = Path(spec)
        name = read_gguf(path).name
    except ModelLoadError as exc:
        log.warning("the model %s cannot be read, so the device names none: %s", spec, exc)
        return None
    return device_model({"name": name, "path": str(path)})


def discovery_preview(settings: Settings) -> dict[str, Any]:
    """Every retained discovery config the config's node would publish now, by topic."""
    from edge_agentd.protocol.mqttwire import Topics  # noqa: PLC0415
    from edge_agentd.service.assembly.assemble import load_skills  # noqa: PLC0415
    from edge_agentd.service.mqtt.discovery import (  # noqa: PLC0415
        Discovery,
        collect_readings,
    )

    section = settings.mqtt or MqttSettings()
    registry = Registry()
    load_skills(registry, settings)
    discovery = Discovery(
        topics=Topics(section.topic_prefix, section.node),
        discovery_prefix=section.discovery_prefix,
        version=package_version(),
        model=configured_model_name(settings.model.path),
        sensor_interval_s=section.sensor_interval_s,
        triggers=tuple(t.name for t in settings.triggers if t.enabled),
    )
    return discovery.configs(collect_readings(registry))


__all__ = [
    "discovery_preview",
    "make_bridge",
    "mqtt_settings",
]
