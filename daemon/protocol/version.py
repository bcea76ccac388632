"""The version of this install, as the daemon tells its clients (Home Assistant's device, the
Model Context Protocol server's info)."""

from __future__ import annotations

import importlib.metadata

DISTRIBUTION = "edge-agentd"
"""This project's name on PyPI (pyproject.toml): ``edge-agent`` there is another project's."""


def package_version() -> str:
    """The installed version; ``0+unknown`` when the package runs uninstalled (from a source
    tree), which no release is."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


__all__ = ["DISTRIBUTION", "package_version"]
