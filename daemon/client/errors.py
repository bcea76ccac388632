"""The errors a request to the daemon may end in, and the id each request carries.

Apart from :mod:`edge_agentd.client.zmqclient`, which re-exports them, so that
:mod:`edge_agentd.client.watching` (a part of the client kept in a file of its own) uses them
without importing the module that imports it.
"""

from __future__ import annotations

import os
from typing import Any


def new_request_id() -> str:
    """A random request id, as uuid4().hex is, without importing uuid at start-up."""
    return os.urandom(16).hex()


class DaemonError(Exception):
    """The daemon answered with an ``error`` reply, or did not answer at all."""

    def __init__(self, code: str, message: str, reply: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.reply = reply


class Unavailable(DaemonError):
    """No daemon answered on the endpoint."""

    def __init__(self, message: str) -> None:
        super().__init__("unavailable", message)


class BadEndpoint(DaemonError):
    """The endpoint string is not one a daemon could listen on (``serve`` refuses it too)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_endpoint", message)


class Timeout(DaemonError):
    """The daemon did not finish answering in time."""

    def __init__(self, message: str) -> None:
        super().__init__("timeout", message)


__all__ = ["BadEndpoint", "DaemonError", "Timeout", "Unavailable", "new_request_id"]
