"""The daemon's connections: counted, capped well below the fd limit, silent and idle ones closed.

libzmq accepts every connection itself, with no hook before ``accept()``, and on ipc it aborts the
whole process when ``accept()`` fails with EMFILE. So the daemon raises its soft fd limit to the
hard one at start, watches its ROUTER's accepts and disconnects through a ZeroMQ monitor, and
keeps at most ``cap`` connections: when one more arrives, a connection that never sent anything,
else the one idle the longest (never one with a run queued or running) is shut down, and libzmq
closes it. The cap is at most half of the fds left free at start, so the connections that arrive
faster than the loop closes them cannot run out of fds either. docs/protocol.md, "Limits and
hostile input", says what a client sees.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import resource
import socket
import struct
import time
from collections.abc import Collection
from typing import Any

import zmq

log = logging.getLogger(__name__)

# pyzmq's flags are enum members, and every `|` or `&` on them builds a new one: the hot paths
# (a few sends and reads per request) use their plain int values.
EVENTS, POLLIN, NOBLOCK, SNDMORE = (
    int(zmq.EVENTS),
    int(zmq.POLLIN),
    int(zmq.NOBLOCK),
    int(zmq.SNDMORE),
)


def readable(sock: zmq.Socket[bytes]) -> bool:
    """Whether a message waits on ``sock``: asking costs a third of the zmq.Again that reading
    an empty socket raises (pyzmq builds an exception for it)."""
    events = sock.getsockopt(EVENTS)
    return isinstance(events, int) and bool(events & POLLIN)

FD_RESERVE = 64
"""Fds kept for everything but client connections: the model file, skills, MQTT, libzmq's own."""
MONITOR_ENDPOINT = "inproc://edge-agent-connections"
_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED


def raise_fd_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # An unlimited hard limit cannot be the soft one: the kernel caps fds at fs.nr_open.
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        log.warning("cannot raise the fd limit from %d to %d: %s", soft, target, exc)
        return soft
    return target


def open_fd_count() -> int:
    """How many fds this process holds now."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def connection_cap(configured: int) -> int:
    """``configured``, lowered when the fd limit leaves less than twice that free."""
    soft = raise_fd_limit()
    free = soft - open_fd_count() - FD_RESERVE
    cap = max(1, min(configured, free // 2))
    if cap < configured:
        log.warning(
            "max_connections lowered from %d to %d: the fd limit is %d (LimitNOFILE= in the unit)",
            configured,
            cap,
            soft,
        )
    return cap


def local_name(endpoint: str) -> tuple[str, Any] | None:
    """What ``getsockname()`` of a connection accepted on ``endpoint`` matches, or None."""
    if endpoint.startswith("ipc://"):
        path = endpoint[len("ipc://") :]
        return ("ipc", "\0" + path[1:] if path.startswith("@") else path)
    if endpoint.startswith("tcp://"):
        _, _, port = endpoint.rpartition(":")
        return ("tcp", int(port)) if port.isdigit() else None
    return None


def monitor_event(frames: list[bytes]) -> tuple[int, int]:
    """``(event, value)`` of one ZeroMQ monitor message: a 16-bit event id and a 32-bit value
    (the fd, for accepts and disconnects). Read here, not with ``zmq.utils.monitor``, whose
    import pulls asyncio and ssl into the daemon: 3.4 MiB of resident memory."""
    if len(frames) != 2 or len(frames[0]) != 6:
        raise RuntimeError(f"not a ZeroMQ monitor event ({len(frames)} frames)")
    event, value = struct.unpack("=hi", frames[0])
    return event, value

class Connections:
    """The ROUTER's open connections by fd, least recently active first.

    ``counts`` holds ``connections_accepted`` and ``connections_closed`` (closed by the cap).
    Only the serving loop's thread uses it.
    """

    def __init__(self, context: zmq.Context[Any], router: zmq.Socket[bytes]) -> None:
        self.cap = 1 << 30
        self.counts: collections.Counter[str] = collections.Counter()
        self._open: collections.OrderedDict[int, float] = collections.OrderedDict()
        self._closing: set[int] = set()
        self._spoken: set[int] = set()
        """fds that have sent a message: a connection that never has goes first."""
        self._serials: dict[int, int] = {}
        """fd -> the number of the connection on it: fd numbers are reused, connections not."""
        self._accepted = 0
        self._newest = -1
        """The fd accepted last: a client that has just connected has not had time to speak."""
        self._names: set[tuple[str, Any]] = set()
        router.monitor(MONITOR_ENDPOINT, _EVENTS)
        self.socket: zmq.Socket[bytes] = context.socket(zmq.PAIR)
        # No limit on events waiting: a lost DISCONNECTED would leave a closed fd counted, and a
        # later connection on the same fd number shut down by mistake.
        self.socket.setsockopt(zmq.RCVHWM, 0)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(MONITOR_ENDPOINT)

    def __len__(self) -> int:
        return len(self._open)

    def listen(self, endpoint: str) -> None:
        """Count connections accepted on ``endpoint`` (as LAST_ENDPOINT names it)."""
        name = local_name(endpoint)
        if name is not None:
            self._names.add(name)

    def seen(self, fd: int) -> None:
        """A message came in on ``fd``: it is the most recently active connection."""
        if fd in self._open:
            self._open[fd] = time.monotonic()
            self._open.move_to_end(fd)
            self._spoken.add(fd)

    def connection(self, fd: int) -> tuple[int, int]:
        """``(fd, number)`` of the connection open on ``fd``, to ask :meth:`alive` later."""
        self.update()
        return (fd, self._serials.get(fd, -1))

    def alive(self, connection: tuple[int, int]) -> bool:
        """Whether that connection is still open.

        libzmq reports a disconnect before it lets the routing id go, and lets it go only once
        the loop has read all the departed peer's messages: with no read between this call and
        a send, a reply that passes it cannot reach another peer that took the routing id.
        """
        self.update()
        fd, serial = connection
        return serial >= 0 and self._serials.get(fd) == serial

    def update(self) -> None:
        """Read every waiting accept and disconnect."""
        # Asked every pass of the loop and before each reply: asking whether an event waits
        # costs a third of the zmq.Again that reading an empty socket raises.
        while readable(self.socket):
            try:
                frames = self.socket.recv_multipart(NOBLOCK)
            except zmq.Again:
                return
            event, fd = monitor_event(frames)
            if event == zmq.EVENT_ACCEPTED:
                self.counts["connections_accepted"] += 1
                self._accepted += 1
                self._serials[fd] = self._accepted
                self._newest = fd
                self._closing.discard(fd)
                self._open[fd] = time.monotonic()
                self._open.move_to_end(fd)
            else:
                self._serials.pop(fd, None)
                self._open.pop(fd, None)
                self._closing.discard(fd)
            self._spoken.discard(fd)

    def drain(self, protected: Collection[int] = ()) -> None:
        """Read every waiting accept and disconnect, then close connections over the cap.

        First the oldest of those that never sent a message (a client sends as soon as it
        connects; a flood need not), then the one idle the longest; never the one accepted last
        nor one in ``protected`` (fds with a run queued or running), unless nothing else is left.
        """
        self.update()
        while len(self._open) > self.cap:
            spared = {self._newest, *protected}
            victim = next(
                (fd for fd in self._open if fd not in spared and fd not in self._spoken), None
            )
            if victim is None:
                victim = next((fd for fd in self._open if fd not in spared), None)
            if victim is None:
                victim = next(reversed(self._open))
            del self._open[victim]
            self._spoken.discard(victim)
            self._closing.add(victim)
            self._shut(victim)

    def _shut(self, fd: int) -> None:
        """Shut the connection on ``fd`` down; libzmq sees the end, closes it and reports it.

        The fd is libzmq's, so it is shut down through a duplicate and never closed here. It is
        only touched when it still is a connection to one of our endpoints.
        """
        try:
            duplicate = os.dup(fd)
        except OSError:
            return
        try:
            sock = socket.socket(fileno=duplicate)
        except OSError:
            os.close(duplicate)
            return
        with sock:
            try:
                name = sock.getsockname()
            except OSError:
                return
            kind = "ipc" if sock.family == socket.AF_UNIX else "tcp"
            if kind == "tcp" and isinstance(name, tuple):
                name = name[1]
            if (kind, name) not in self._names:
                return
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
                self.counts["connections_closed"] += 1
                log.debug("connection on fd %d closed: over the cap of %d", fd, self.cap)

    def close(self, router: zmq.Socket[bytes]) -> None:
        with contextlib.suppress(zmq.ZMQError):
            router.disable_monitor()
        self.socket.close(linger=0)


__all__ = ["Connections", "connection_cap", "local_name", "raise_fd_limit", "readable"]
