"""The Model Context Protocol listener made from the ``[mcp]`` section, or a config error naming
what to install; imports the SDK only when the section asks for the server."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from edge_agentd.protocol.version import package_version
from edge_agentd.service.config.mcp import McpSettings, read_token
from edge_agentd.service.config.settings import ConfigError, Settings

if TYPE_CHECKING:
    from edge_agentd.service.mcp.http import HttpListener

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'mcp>=2.3,<3' 'uvicorn>=0.35' (the mcp extra)"


def mcp_settings(settings: Settings) -> McpSettings | None:
    """The ``[mcp]`` section when it is present and enabled."""
    section = settings.mcp
    return section if section is not None and section.enabled else None


def make_listener(settings: Settings) -> HttpListener | None:
    """The listener ``[mcp]`` asks for (None when absent or off), not bound yet (its
    :meth:`~HttpListener.start` names the daemon's endpoint); ConfigError
    for an SDK not installed or a token file that cannot be read."""
    section = mcp_settings(settings)
    if section is None:
        return None
    try:
        from edge_agentd.service.mcp.backend import DaemonBackend  # noqa: PLC0415
        from edge_agentd.service.mcp.http import HttpListener  # noqa: PLC0415 - optional extra
        from edge_agentd.service.mcp.server import Tools  # noqa: PLC0415
    except ImportError as exc:
        raise ConfigError(f"[mcp] needs the mcp extra: {INSTALL_HINT} ({exc})") from None
    try:
        token = read_token(section)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    tools = Tools(DaemonBackend(None), section)
    return HttpListener(section, tools, token, package_version())


__all__ = ["INSTALL_HINT", "make_listener", "mcp_settings"]
