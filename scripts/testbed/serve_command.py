"""The daemon's command line as the tests and the benchmarks start it: one place to change it.

Standard library only, so a benchmark imports it without pulling in the test harness or the
daemon. The daemon is started with this interpreter and
``-m edge_agentd.cli``, so it runs the checkout's code whichever venv runs the caller.
"""

from __future__ import annotations

import sys
from pathlib import Path


def edge_agent_command(*args: str) -> list[str]:
    """``edge-agent ARGS...`` with this interpreter."""
    return [sys.executable, "-m", "edge_agentd.cli", *args]


def serve_command(
    *,
    config: Path | None = None,
    mock: Path | None = None,
    endpoint: str | None = None,
    log_level: str | None = "WARNING",
    extra: tuple[str, ...] = (),
) -> list[str]:
    """``edge-agent serve`` with a config file, a scripted mock model, one endpoint and a log level
    (WARNING unless asked: a benchmark's or a test's output stays its own), each only when given."""
    args = ["serve"]
    if config is not None:
        args += ["--config", str(config)]
    if mock is not None:
        args += ["--model", f"mock:{mock}"]
    if endpoint is not None:
        args += ["--endpoint", endpoint]
    if log_level is not None:
        args += ["--log-level", log_level]
    return edge_agent_command(*args, *extra)


__all__ = ["edge_agent_command", "serve_command"]
