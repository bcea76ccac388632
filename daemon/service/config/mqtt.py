"""The ``[mqtt]`` section of the daemon's config (systemd/config.example.toml documents it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from edge_agentd.protocol.mqttwire import (
    DEFAULT_DISCOVERY_PREFIX,
    DEFAULT_PREFIX,
    check_node_id,
    check_prefix,
    default_node_id,
)

MAX_PASSWORD_BYTES = 4096


class MqttSettings(BaseModel):
    """Where the broker is, who we are on it, and what Home Assistant is told."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    enabled: bool = True
    """A present section turns the bridge on; ``enabled = false`` keeps it written but off."""
    host: Annotated[str, Field(min_length=1, max_length=253)] = "localhost"
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    """Default 1883, or 8883 with TLS."""
    tls: bool = False
    ca_file: str | None = None
    """A CA bundle to check the broker's certificate against (turns TLS on); unset with
    ``tls = true``: the system's CAs."""
    cert_file: str | None = None
    key_file: str | None = None
    username: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    password_file: str | None = None
    """The password is read from this file (first line), never from the config text."""
    client_id: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    """Default ``edge-agent-<node_id>``."""
    topic_prefix: str = DEFAULT_PREFIX
    node_id: str | None = None
    """Default: the hostname up to its first dot, made topic-safe."""
    discovery: bool = True
    discovery_prefix: str = DEFAULT_DISCOVERY_PREFIX
    sensor_interval_s: Annotated[float, Field(ge=5, le=86400, allow_inf_nan=False)] = 60.0
    keepalive_s: Annotated[int, Field(ge=5, le=3600)] = 60
    reconnect_max_s: Annotated[int, Field(ge=1, le=3600)] = 60
    buffer_messages: Annotated[int, Field(ge=16, le=100_000)] = 1000
    """Outgoing messages held while the broker is away (results, QoS 1); beyond, they are
    counted as undeliverable and logged."""

    @field_validator("node_id")
    @classmethod
    def _node(cls, value: str | None) -> str | None:
        return None if value is None else check_node_id(value)

    @field_validator("topic_prefix", "discovery_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        return check_prefix(value)

    @model_validator(mode="after")
    def _pairs(self) -> MqttSettings:
        if self.key_file is not None and self.cert_file is None:
            raise ValueError("key_file needs cert_file")
        if self.cert_file is not None and self.key_file is None:
            raise ValueError("cert_file needs key_file")
        if self.password_file is not None and self.username is None:
            raise ValueError("password_file needs username")
        return self

    @property
    def use_tls(self) -> bool:
        return self.tls or self.ca_file is not None or self.cert_file is not None

    @property
    def broker_port(self) -> int:
        if self.port is not None:
            return self.port
        return 8883 if self.use_tls else 1883

    @property
    def node(self) -> str:
        return self.node_id or default_node_id()

    @property
    def client_name(self) -> str:
        return self.client_id or f"edge-agent-{self.node}"


def read_password(settings: MqttSettings) -> str | None:
    """The password's first line, or None; a ValueError names the file, never its content."""
    if settings.password_file is None:
        return None
    path = Path(settings.password_file)
    try:
        raw = path.read_bytes()[: MAX_PASSWORD_BYTES + 1]
    except OSError as exc:
        raise ValueError(f"mqtt.password_file: cannot read {path}: {exc.strerror}") from None
    if len(raw) > MAX_PASSWORD_BYTES:
        raise ValueError(f"mqtt.password_file: {path} is longer than {MAX_PASSWORD_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"mqtt.password_file: {path} is not UTF-8 text") from None
    password = text.splitlines()[0] if text else ""
    if not password:
        raise ValueError(f"mqtt.password_file: {path} holds no password")
    return password


__all__ = ["MqttSettings", "read_password"]
