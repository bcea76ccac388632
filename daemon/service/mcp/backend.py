"""The Model Context Protocol server's way to the daemon: a client of its ZeroMQ socket like any
other (as the MQTT bridge is), so a tool call meets the same queue, limits, journal and counters
as a ZeroMQ client, and ``edge-agent mcp`` (stdio, another process) and ``serve``'s HTTP server
share every line of it.

Each request opens its own :class:`~edge_agentd.client.zmqclient.Client` (a Client is one
thread's): the SDK's handlers call these from worker threads, never from its event loop.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from edge_agentd.client.errors import DaemonError, Timeout
from edge_agentd.client.zmqclient import Client

CALL_WAIT_S = 60.0
"""How long a skill call's reply is waited for: its timeout (30 s unless it sets one) and more."""
MAX_WAIT_S = 3600.0


@dataclasses.dataclass(frozen=True)
class Asked:
    """What ``ask`` got: the run's result reply, or only its id when it outlasted the wait."""

    run_id: str
    key: str
    reply: dict[str, Any] | None


class DaemonBackend:
    """Blocking requests to the daemon at ``endpoint`` (None: where every client looks)."""

    def __init__(self, endpoint: str | None, *, timeout_s: float = 10.0) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s

    def _client(self, timeout: float | None = None) -> Client:
        return Client(self.endpoint, timeout=timeout or self.timeout_s, retries=0)

    def skills(self) -> list[dict[str, Any]]:
        with self._client() as client:
            return client.skills()

    def call(self, skill: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The ``call`` result (``ok``, ``result``, ``error``); DaemonError for an error reply
        (``not_found``, ``bad_request``, ``busy``...)."""
        with self._client(CALL_WAIT_S) as client:
            return client.request("call", skill=skill, arguments=arguments, source="mcp")

    def ask(self, question: str, *, wait_s: float, key: str | None) -> Asked:
        """Run ``question``, keyed (the caller's key, or one of ours) so that a run outlasting
        ``wait_s`` goes on and can be fetched by its id; DaemonError for an error reply."""
        run_id = uuid.uuid4().hex
        key = key or f"mcp-{run_id}"
        wait = min(max(wait_s, 0.05), MAX_WAIT_S)
        with self._client() as client:
            try:
                reply = client.request(
                    "run", query=question, key=key, source="mcp", timeout=wait, request_id=run_id
                )
            except Timeout:
                return Asked(run_id, key, None)
        return Asked(str(reply.get("run_id") or run_id), key, reply)

    def result(self, run_id: str | None, *, key: str | None, wait_s: float) -> dict[str, Any]:
        """The journal's record of ``run_id`` (or of the run holding ``key``), waited for up to
        ``wait_s`` while it goes on."""
        wait = min(max(wait_s, 0.0), MAX_WAIT_S)
        with self._client() as client:
            if run_id is None:
                record = client.request("result", key=key)
                if record.get("state") not in ("queued", "running") or wait <= 0:
                    return record
                run_id = str(record["run_id"])
            return client.result(run_id, wait=wait)


__all__ = ["CALL_WAIT_S", "Asked", "DaemonBackend", "DaemonError"]
