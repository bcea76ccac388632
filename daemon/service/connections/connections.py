"""The daemon's connections: counted, served up to a cap, and never let run the process out of fds.

libzmq accepts every connection itself, with no hook before ``accept()``; on ipc it aborts the
whole process when ``accept()`` fails with EMFILE, on tcp it spins. So the daemon raises its soft
fd limit to the hard one at start, watches its ROUTER's accepts and disconnects through a ZeroMQ
monitor, and keeps three bounds, all from the fds the limit leaves free at start (``room``):

- ``cap``: connections served (``max_connections``; unset, half the room). A connection accepted
  past it is over the cap: its requests are answered ``busy`` until one served leaves.
- Past the cap, connections that never sent anything and are idle for :data:`IDLE_S` are
  closed; past ``pressure`` (halfway to the ceiling), idle ones that have spoken too. Never one
  with a request being read, a run queued or running, or a reply pending (nothing read or sent
  for IDLE_S): a ZeroMQ client reconnects at once, so closing a live one only churns.
- ``ceiling`` (three quarters of the room): new connections are paused there (.listeners), so
  the fds never run out, and let in again under it. The pause is the connection watcher's
  (.watcher): a thread that reads the monitor as events come, since a burst can fill the fds
  left past the ceiling faster than one pass of the serving loop. It hands every accept and
  disconnect on to this module's books, kept by the loop's thread, which also reads the events
  still waiting whenever it takes them: after a message, its books hold the connection the
  message came in on, however far the watcher's thread lags.

docs/protocol.md, "Limits and hostile input", says what a client sees.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import socket
import time
from collections.abc import Collection
from typing import Any

import zmq

from edge_agentd.service.connections.listeners import FdReserve, ListenerGate
from edge_agentd.service.connections.watcher import ConnectionWatch, FdBudget, raise_fd_limit

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


IDLE_S = 5.0
"""Over the cap, a connection quiet this long with nothing pending may be closed; a client sends
as soon as it connects, and a reply leaves long before this."""
SWEEP_S = 0.5
"""How often connections over the cap are looked at."""


def local_name(endpoint: str) -> tuple[str, Any] | None:
    """What ``getsockname()`` of a connection accepted on ``endpoint`` matches, or None."""
    if endpoint.startswith("ipc://"):
        path = endpoint[len("ipc://") :]
        return ("ipc", "\0" + path[1:] if path.startswith("@") else path)
    if endpoint.startswith("tcp://"):
        _, _, port = endpoint.rpartition(":")
        return ("tcp", int(port)) if port.isdigit() else None
    return None


class Connections:
    """The ROUTER's open connections by fd, least recently active first.

    ``counts`` holds ``connections_accepted``, ``connections_closed`` (closed over the cap),
    ``connections_over_cap``, and the watcher's (.watcher.COUNTERS). Only the serving loop's
    thread uses it.
    """

    def __init__(self, context: zmq.Context[Any], router: zmq.Socket[bytes]) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.watch = ConnectionWatch(context, router, self.counts)
        self.socket = self.watch.wakeup.fileno()
        """Readable when the watcher has handed events on: the serving loop polls this fd."""
        self._open: collections.OrderedDict[int, float] = collections.OrderedDict()
        """fd -> when it was last active (accepted, read from, answered), oldest first."""
        self._spoken: set[int] = set()
        """fds that have sent a message: a connection that never has goes first."""
        self._closing: set[int] = set()
        """fds shut down here, until libzmq reports them gone."""
        self._serials: dict[int, int] = {}
        """fd -> the number of the connection on it: fd numbers are reused, connections not."""
        self._early: set[int] = set()
        """Connections counted open on their first message, before the watcher's accept."""
        self._served: set[int] = set()
        self._waiting: collections.OrderedDict[int, None] = collections.OrderedDict()
        """Connections over the cap, in the order they came: the first is served next."""
        self._accepted = 0
        self._next_sweep = 0.0
        self._names: set[tuple[str, Any]] = set()

    def __len__(self) -> int:
        return len(self._open)

    @property
    def budget(self) -> FdBudget:
        return self.watch.budget

    @budget.setter
    def budget(self, budget: FdBudget) -> None:
        self.watch.budget = budget

    @property
    def gate(self) -> ListenerGate:
        return self.watch.gate

    @property
    def spare(self) -> FdReserve:
        return self.watch.spare

    @property
    def cap(self) -> int:
        return self.budget.cap

    def listen(self, endpoint: str) -> None:
        """Count connections accepted on ``endpoint`` (as LAST_ENDPOINT names it); the first
        starts the watcher (the budget is set by then)."""
        name = local_name(endpoint)
        if name is not None:
            self._names.add(name)
        self.gate.add(endpoint)
        self.watch.start()

    def seen(self, fd: int) -> None:
        """A message came in on ``fd``: it is the most recently active connection."""
        # libzmq reported the connection's accept before the message could be read, and the
        # disconnect of any connection the fd held before: taken now, the books hold the
        # connection the message came in on, not a departed one on the same fd number.
        self.update()
        if fd in self._open:
            self.touch(fd)
            self._spoken.add(fd)

    def touch(self, fd: int) -> None:
        """Something was read from or sent to ``fd``: it is not idle."""
        if fd in self._open:
            self._open[fd] = time.monotonic()
            self._open.move_to_end(fd)

    def over_cap(self, fd: int) -> bool:
        """Whether the connection on ``fd`` waits past the cap: its requests get ``busy``."""
        return fd in self._waiting

    def connection(self, fd: int) -> tuple[int, int]:
        """``(fd, number)`` of the connection open on ``fd``, to ask :meth:`alive` later."""
        # The accept was reported before the connection's first message could be read, and
        # update() reads the monitor itself, not waiting for the watcher's thread: the fd's
        # number is the connection's now, never a departed one's whose run would be answered
        # into the void (test_soak's warm-up, on a loaded box, got no reply that way).
        self.update()
        if fd >= 0 and fd not in self._serials:
            # Not reported (never seen to happen): a message was just read from it, so it is
            # open, and its reply must not be dropped as to a gone connection.
            log.debug("connection on fd %d counted before its accept was reported", fd)
            self._opened(fd)
            self._early.add(fd)
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
        """Take every accept and disconnect the watcher has handed on."""
        for event, fd in self.watch.take():
            if event == zmq.EVENT_ACCEPTED:
                if fd in self._early:
                    self._early.discard(fd)  # counted already, on its first message
                else:
                    self._opened(fd)
            else:
                self._gone(fd)

    def _opened(self, fd: int) -> None:
        self.counts["connections_accepted"] += 1
        self._accepted += 1
        self._serials[fd] = self._accepted
        self._spoken.discard(fd)
        self._closing.discard(fd)
        self._open[fd] = time.monotonic()
        self._open.move_to_end(fd)
        if len(self._served) < self.budget.cap:
            self._served.add(fd)
        else:
            self._waiting[fd] = None
            self.counts["connections_over_cap"] += 1

    def _gone(self, fd: int) -> None:
        self._serials.pop(fd, None)
        self._early.discard(fd)
        self._open.pop(fd, None)
        self._spoken.discard(fd)
        self._closing.discard(fd)
        self._waiting.pop(fd, None)
        self._served.discard(fd)
        while self._waiting and len(self._served) < self.budget.cap:
            first, _ = self._waiting.popitem(last=False)
            self._served.add(first)

    def drain(self, protected: Collection[int] = ()) -> None:
        """Read every waiting event; over the cap close idle connections; pause or let in.

        ``protected``: the fds with a run queued or running, never closed. Pausing and letting
        in is the watcher's (.watcher).
        """
        self.watch.clear_wakeup()  # first: a wake-up for an event still to come stays
        self.update()
        now = time.monotonic()
        if len(self._open) > self.budget.cap and now >= self._next_sweep:
            self._next_sweep = now + SWEEP_S
            self._sweep(now, protected)

    def _sweep(self, now: float, protected: Collection[int]) -> None:
        """Close idle connections until the cap is met: the silent ones, the least recently
        active first; past ``pressure``, then those that have spoken too."""
        idle = []
        for fd, active in self._open.items():  # least recently active first
            if now - active < IDLE_S:
                break
            if fd not in protected and fd not in self._closing:
                idle.append(fd)
        excess = len(self._open) - len(self._closing) - self.budget.cap
        victims = [fd for fd in idle if fd not in self._spoken]
        if len(self._open) >= self.budget.pressure:
            victims += [fd for fd in idle if fd in self._spoken]
        for fd in victims[:excess]:
            self._closing.add(fd)
            self._shut(fd)

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
                log.debug("idle connection on fd %d closed: over the cap of %d", fd, self.cap)

    def close(self, router: zmq.Socket[bytes]) -> None:
        # The monitor first: libzmq's I/O thread blocks sending an event that nobody can take,
        # and the context would never end.
        with contextlib.suppress(zmq.ZMQError):
            router.disable_monitor()
        self.watch.close()


__all__ = ["Connections", "FdBudget", "local_name", "raise_fd_limit", "readable"]
