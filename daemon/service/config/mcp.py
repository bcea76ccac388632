"""The ``[mcp]`` section: the Model Context Protocol server ``serve`` runs beside ZeroMQ
(docs/mcp.md documents every key)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

LOOPBACK = ("127.0.0.1", "::1", "localhost")
MAX_TOKEN_BYTES = 4096


class McpSettings(BaseModel):
    """Where the streamable HTTP server listens, who may connect, and what it offers."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    enabled: bool = True
    """A present section turns the server on; ``enabled = false`` keeps it written but off."""
    host: Annotated[str, Field(min_length=1, max_length=253)] = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8765
    """0: a free port the OS picks (the log and ``status`` say which)."""
    path: Annotated[str, Field(pattern=r"^/[A-Za-z0-9/_.-]{0,63}$")] = "/mcp"
    allow: list[str] = Field(default_factory=list)
    """Addresses or networks (``192.168.1.10``, ``192.168.1.0/24``) that may connect besides
    loopback; required when ``host`` is not a loopback address."""
    token_file: str | None = None
    """A bearer token (first line of this file) every request must carry; unset: none asked."""
    skills: list[str] | None = None
    """Only these skills become tools; unset: every skill the daemon serves."""
    ask: bool = True
    """Offer ``ask`` and ``result`` (the on-device model); false: the skills only."""
    ask_wait_s: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] = 8.0
    """How long ``ask`` waits for the answer unless the caller says: under Home Assistant's 10 s."""
    max_sessions: Annotated[int, Field(ge=1, le=10_000)] = 32
    session_idle_s: Annotated[float, Field(ge=1, le=86_400, allow_inf_nan=False)] = 120.0
    max_body_bytes: Annotated[int, Field(ge=1024, le=16 * 1024 * 1024)] = 256 * 1024
    max_connections: Annotated[int, Field(ge=1, le=10_000)] = 64
    """Open HTTP connections at once; beyond, a new one gets 503."""
    watch_s: Annotated[float, Field(ge=0.1, le=86_400, allow_inf_nan=False)] = 30.0
    """How often ``edge-agent mcp`` reads the skills, to tell its client the tool list changed
    (the HTTP server restarts with the daemon, the only time the skills change)."""

    @field_validator("allow")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an address or network") from None
        return value

    @model_validator(mode="after")
    def _reachable_only_by_name(self) -> McpSettings:
        if self.host not in LOOPBACK and not self.allow:
            raise ValueError(
                f"host {self.host!r} is not loopback: name who may connect in `allow` "
                "(addresses or networks, such as your Home Assistant's address)"
            )
        return self

    def networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """Who may connect: loopback always, and ``allow``."""
        named = [ipaddress.ip_network(entry, strict=False) for entry in self.allow]
        return [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"), *named]


def read_token(section: McpSettings) -> str | None:
    """The bearer token of ``token_file``, or None; ValueError naming the file for one that
    cannot be read or is empty (never its content)."""
    if section.token_file is None:
        return None
    path = Path(section.token_file)
    try:
        data = path.read_bytes()[: MAX_TOKEN_BYTES + 1]
    except OSError as exc:
        raise ValueError(f"mcp: token_file {path}: {exc.strerror or exc}") from None
    lines = data.decode("utf-8", errors="replace").splitlines()
    token = lines[0].strip() if lines else ""
    if not token or len(data) > MAX_TOKEN_BYTES:
        raise ValueError(f"mcp: token_file {path} must hold one token on its first line")
    return token


__all__ = ["LOOPBACK", "McpSettings", "read_token"]
