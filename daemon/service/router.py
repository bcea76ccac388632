"""The daemon's socket: the ROUTER clients talk to.

Only the serving loop's thread touches it; other threads reach the loop through its wake-up pipe
(service/threads/wakeup.py).
"""

from __future__ import annotations

import ctypes
import logging
import os
from typing import Any

import zmq

from edge_agentd.protocol.endpoints import EndpointError, IpcClaim, check_endpoint, ipc_path
from edge_agentd.service.connections.connections import (
    NOBLOCK,
    SNDMORE,
    Connections,
    FdBudget,
    readable,
)

log = logging.getLogger(__name__)

LINGER_MS = 1000
"""On exit, how long replies still queued for slow clients may take to leave."""
RCVHWM = 16
"""Requests read from one connection but not yet handled; then libzmq stops reading from it."""
SNDHWM = 1000
"""Replies to one connection not yet taken by it; beyond that they are dropped and counted. A
streamed run at the default caps sends far fewer: only a client that stopped reading loses any."""
HANDSHAKE_MS = 10_000
"""A connection that has not finished ZeroMQ's greeting by then is closed by libzmq."""


def is_auto_routing_id(routing_id: bytes) -> bool:
    """True for a routing id the ROUTER made up: a zero byte and 4 bytes of its counter.

    A peer may choose its own (ZMQ_ROUTING_ID), and another peer may choose the same one after
    it leaves; such connections are refused (docs/protocol.md, "Connections").
    """
    return len(routing_id) == 5 and routing_id[0] == 0


def _seed_routing_ids() -> None:
    """Make the ROUTER's first routing id unguessable.

    libzmq numbers the peers that choose no routing id from a counter it starts at ``rand()``,
    which nobody seeds: in a fresh process the first is 0x006b8b4567. A peer that chose the next
    number as its own routing id would take a departed client's id, or make libzmq abort when
    the next client gets the same number (an assertion in socket_base.cpp). Seeding libc's
    ``rand()`` from the OS, just before the socket is made, leaves such a peer a 32-bit guess.
    """
    try:
        libc = ctypes.CDLL(None)
        libc.srand(ctypes.c_uint(int.from_bytes(os.urandom(4), "little")))
    except (OSError, AttributeError) as exc:
        log.warning("cannot seed the routing ids: %s", exc)


def split_frames(frames: list[bytes]) -> tuple[list[bytes], list[bytes], bool]:
    """(envelope, payload frames, REQ-shaped) of a message as the ROUTER received it.

    A REQ socket (or a DEALER imitating one) puts an empty delimiter after its identity; a bare
    DEALER does not. Replies go back in the same shape.
    """
    req_shape = len(frames) >= 3 and frames[1] == b""
    envelope = frames[:2] if req_shape else frames[:1]
    return envelope, frames[len(envelope) :], req_shape


class RouterSocket:
    """One ROUTER bound to every endpoint; sends never block and failures are counted."""

    def __init__(self, max_request_bytes: int, max_connections: int | None = None) -> None:
        self.bound: list[str] = []
        self.dropped = 0
        self.last_fd = -1
        """The fd of the connection the last message came in on."""
        self.max_connections = max_connections
        self._claims: list[IpcClaim] = []
        self._context: zmq.Context[Any] = zmq.Context()
        _seed_routing_ids()
        self.socket: zmq.Socket[bytes] = self._context.socket(zmq.ROUTER)
        # A frame far beyond the request limit is dropped by ZeroMQ with its connection; one a
        # little over it still gets a `too_large` reply.
        self.socket.setsockopt(zmq.MAXMSGSIZE, 4 * max_request_bytes + 4096)
        self.socket.setsockopt(zmq.LINGER, LINGER_MS)
        # Bounded queues both ways, per connection: with the connection cap, a bound in total.
        self.socket.setsockopt(zmq.SNDHWM, SNDHWM)
        self.socket.setsockopt(zmq.RCVHWM, RCVHWM)
        self.socket.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_MS)
        self.connections = Connections(self._context, self.socket)
        # A reply that cannot be delivered (the peer left, or stopped reading) raises instead of
        # vanishing, so it is counted; it never holds up anyone else.
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)

    def bind(self, endpoints: list[str], *, allow_remote: bool) -> list[str]:
        """Claim and bind every endpoint, or raise EndpointError (then call :meth:`close`)."""
        budget = FdBudget.at_start(self.max_connections)
        self.connections.budget = budget
        self.connections.spare.take()
        self.socket.setsockopt(zmq.BACKLOG, budget.backlog)
        for requested in endpoints:
            endpoint = check_endpoint(requested, allow_remote=allow_remote)
            path = ipc_path(endpoint)
            claim = None
            if path is not None:
                claim = IpcClaim(path)
                claim.acquire()
                self._claims.append(claim)
            if "[" in endpoint:
                self.socket.setsockopt(zmq.IPV6, 1)
            # No one but this user (and, under systemd's UMask=0007, its group) may connect.
            previous = os.umask(0o077)
            os.umask(previous | 0o007)
            try:
                self.socket.bind(endpoint)
            except zmq.ZMQError as exc:
                raise EndpointError(f"cannot bind {endpoint}: {exc}") from None
            finally:
                os.umask(previous)
            if claim is not None:
                claim.bound()
            self.bound.append(self.socket.getsockopt_string(zmq.LAST_ENDPOINT))
            self.connections.listen(self.bound[-1])
        return self.bound

    def receive(self) -> list[bytes] | None:
        """The next waiting message, or None."""
        # Asking first costs a third of the zmq.Again that reading an empty socket raises (pyzmq
        # builds an exception for it), and the loop reads until empty on every wake.
        sock = self.socket
        if not readable(sock):
            return None
        try:
            parts = [sock.recv(NOBLOCK, copy=False)]
            while parts[-1].more:
                parts.append(sock.recv(NOBLOCK, copy=False))
        except zmq.Again:
            return None
        try:
            self.last_fd = int(parts[-1].get(zmq.SRCFD))
        except zmq.ZMQError:
            # libzmq keeps no fd on messages of a ZMTP 1.0 peer (ZeroMQ 2, or a stranger's
            # bytes that happen to read as its greeting): such a connection cannot be told apart.
            self.last_fd = -1
        self.connections.seen(self.last_fd)
        return [part.bytes for part in parts]

    def send(self, envelope: list[bytes], payload: bytes) -> bool:
        sock = self.socket
        try:
            # A multipart message leaves whole or not at all: only its first frame can fail.
            for frame in envelope:
                sock.send(frame, NOBLOCK | SNDMORE)
            sock.send(payload, NOBLOCK)
        except zmq.ZMQError as exc:
            self.dropped += 1
            log.debug("reply dropped: %s", exc)
            return False
        return True

    def close(self) -> None:
        """Close the socket, let queued replies leave (briefly), and remove our ipc files."""
        self.connections.close(self.socket)
        self.socket.close(linger=LINGER_MS)
        self._context.term()
        for claim in self._claims:
            claim.release()
        self._claims.clear()


__all__ = ["RouterSocket", "is_auto_routing_id", "split_frames"]
