"""The daemon's sockets: the ROUTER clients talk to, and the pipe that wakes the serving loop.

Only the serving loop's thread touches these; other threads reach it through :class:`WakeUpPipe`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from typing import Any

import zmq

from edge_agent.endpoints import EndpointError, IpcClaim, check_endpoint, ipc_path

log = logging.getLogger(__name__)

LINGER_MS = 1000
"""On exit, how long replies still queued for slow clients may take to leave."""


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

    def __init__(self, max_request_bytes: int) -> None:
        self.bound: list[str] = []
        self.dropped = 0
        self._claims: list[IpcClaim] = []
        self._context: zmq.Context[Any] = zmq.Context()
        self.socket: zmq.Socket[bytes] = self._context.socket(zmq.ROUTER)
        # A frame far beyond the request limit is dropped by ZeroMQ with its connection; one a
        # little over it still gets a `too_large` reply.
        self.socket.setsockopt(zmq.MAXMSGSIZE, 4 * max_request_bytes + 4096)
        self.socket.setsockopt(zmq.LINGER, LINGER_MS)
        self.socket.setsockopt(zmq.SNDHWM, 10_000)
        self.socket.setsockopt(zmq.RCVHWM, 10_000)
        # A reply that cannot be delivered (the peer left, or stopped reading) raises instead of
        # vanishing, so it is counted; it never holds up anyone else.
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)

    def bind(self, endpoints: list[str], *, allow_remote: bool) -> list[str]:
        """Claim and bind every endpoint, or raise EndpointError (then call :meth:`close`)."""
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
        return self.bound

    def receive(self) -> list[bytes] | None:
        """The next waiting message, or None."""
        try:
            frames: list[bytes] = self.socket.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return None
        return frames

    def send(self, envelope: list[bytes], payload: bytes) -> bool:
        try:
            self.socket.send_multipart([*envelope, payload], zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            self.dropped += 1
            log.debug("reply dropped: %s", exc)
            return False
        return True

    def close(self) -> None:
        """Close the socket, let queued replies leave (briefly), and remove our ipc files."""
        self.socket.close(linger=LINGER_MS)
        self._context.term()
        for claim in self._claims:
            claim.release()
        self._claims.clear()


class WakeUpPipe:
    """A socketpair the serving loop polls; any thread (or a signal handler) may wake it."""

    def __init__(self) -> None:
        self._read, self._write = socket.socketpair()
        self._read.setblocking(False)
        self._write.setblocking(False)

    def fileno(self) -> int:
        return self._read.fileno()

    def wake(self) -> None:
        # A full pipe already holds a wake-up, and a closed one belongs to a loop that has ended.
        with contextlib.suppress(OSError):
            self._write.send(b"\0")

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while self._read.recv(4096):
                pass

    def close(self) -> None:
        self._read.close()
        self._write.close()


__all__ = ["RouterSocket", "WakeUpPipe", "split_frames"]
