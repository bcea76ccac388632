"""Everything the serving loop sends: replies packed and sent, errors logged and counted.

A reply that cannot be delivered (the peer left, or stopped reading) is counted and dropped; it
never holds up anyone else.
"""

from __future__ import annotations

import collections
import logging

from edge_agentd.protocol.wire import ErrorCode, ErrorReply, Reply, encode
from edge_agentd.service.router import RouterSocket

log = logging.getLogger(__name__)

CLIENT_MISTAKES: frozenset[ErrorCode] = frozenset(
    {"bad_request", "too_large", "unsupported_version", "key_conflict"}
)
"""Logged at debug level: hostile input must not flood the journal."""
MAX_MESSAGE_CHARS = 300
"""An error reply's ``message`` is cut to this: a reply never grows with what the client sent
(docs/protocol.md, "Limits and hostile input")."""


class Replies:
    """Sends on the loop's ROUTER socket. ``counts`` holds ``error_<code>`` and
    ``replies_dropped``."""

    def __init__(self, router: RouterSocket) -> None:
        self._router = router
        self.counts: collections.Counter[str] = collections.Counter()

    def send(self, envelope: list[bytes], reply: Reply) -> None:
        self.send_packed(envelope, encode(reply))

    def send_packed(
        self, envelope: list[bytes], payload: bytes, connection: tuple[int, int] | None = None
    ) -> None:
        """Send a reply the run thread has already packed.

        With ``connection`` (a run's), only while that connection is open: a peer that took
        its routing id after it left is not sent what it asked (docs/protocol.md, "Connections").
        """
        if connection is not None:
            if not self._router.connections.alive(connection):
                self.counts["replies_dropped"] += 1
                return
            self._router.connections.touch(connection[0])  # a reply pending: not idle
        if not self._router.send(envelope, payload):
            self.counts["replies_dropped"] += 1

    def fail(
        self,
        envelope: list[bytes],
        request_id: str | None,
        code: ErrorCode,
        message: str,
        connection: tuple[int, int] | None = None,
    ) -> None:
        """Answer with an ``error`` reply, counted by its code."""
        self.counts[f"error_{code}"] += 1
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 1] + "…"
        level = logging.DEBUG if code in CLIENT_MISTAKES else logging.INFO
        log.log(level, "request %s: %s: %s", request_id, code, message)
        reply = ErrorReply(id=request_id, code=code, message=message)
        self.send_packed(envelope, encode(reply), connection)


__all__ = ["MAX_MESSAGE_CHARS", "Replies"]
