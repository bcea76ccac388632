"""The connection watcher: a thread that pauses new connections the moment the fds run short.

The serving loop counts connections from the ROUTER's ZeroMQ monitor, but only once per pass,
and a pass can take longer than a burst of clients needs to fill the fds left past the pause
point: then libzmq's accept() fails with EMFILE, and on tcp it retries at once (a core spent),
on ipc it aborts the process. So this thread reads the monitor as events come. It counts every
accept and disconnect, pauses the :class:`~.listeners.ListenerGate` when the count reaches the
ceiling (an OS-level change: no ZeroMQ socket but the monitor is touched), lets connections in
again once fds are free, and, if accept() fails all the same, empties the kernel's accept queue
(:meth:`~.listeners.ListenerGate.refuse_backlog`) so libzmq stops retrying. Every accept and
disconnect is handed on unchanged to the serving loop, which keeps its own books
(.connections). The loop never waits for this thread: when it takes the events it reads what
is still in the monitor itself, the two in turn under one lock (:meth:`ConnectionWatch.take`).

docs/protocol.md, "Limits and hostile input", says what a client sees.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import resource
import struct
import threading
import time
from typing import Any

import zmq

from edge_agentd.service.connections.listeners import FdReserve, ListenerGate
from edge_agentd.service.threads.daemonthread import DaemonThread
from edge_agentd.service.threads.wakeup import WakeUp

log = logging.getLogger(__name__)

FD_RESERVE = 64
"""Fds kept for everything but client connections: the model file, skills, MQTT, libzmq's own,
and the :class:`~.listeners.FdReserve` (half of them)."""
SPARE_FDS = FD_RESERVE // 2
RESUME_S = 1.0
"""While paused, how often the fds are counted to see whether to let connections in again."""
STALE_FAILURES = 64
"""Failed accepts read in one go that are handled once: libzmq retried while the first waited."""
MONITOR_ENDPOINT = "inproc://edge-agent-connections"
_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_ACCEPT_FAILED
EVENTS, POLLIN, NOBLOCK = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.NOBLOCK)
COUNTERS = (
    "connections_paused",
    "accept_failures",
    "connections_refused_at_limit",
    "connections_past_pause",
)
"""The watcher's counters, in the serving loop's Counter: seeded, so this thread never adds a
key to a dict that the loop's thread copies."""


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
    """How many fds this process holds now; an exhausted process (it cannot list them) says so
    by counting as many as its limit."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


@dataclasses.dataclass(frozen=True)
class FdBudget:
    """How the fds the limit leaves free are shared out (.connections' docstring)."""

    limit: int
    room: int
    cap: int
    ceiling: int

    @classmethod
    def unbounded(cls) -> FdBudget:
        """Before the endpoints are bound: nothing is capped yet."""
        return cls(limit=1 << 30, room=1 << 30, cap=1 << 30, ceiling=1 << 30)

    @classmethod
    def at_start(cls, configured: int | None) -> FdBudget:
        limit = raise_fd_limit()
        room = max(4, limit - open_fd_count() - FD_RESERVE)
        cap = max(1, min(configured or room // 2, room // 2))
        if configured is not None and cap < configured:
            log.warning(
                "max_connections lowered from %d to %d: the fd limit is %d (LimitNOFILE=)",
                configured,
                cap,
                limit,
            )
        return cls(limit=limit, room=room, cap=cap, ceiling=cap + max(1, (room - cap) // 2))

    @property
    def pressure(self) -> int:
        """From here on, idle connections that have spoken are closed too, not only silent ones:
        a ZeroMQ client reconnects at once, so closing it below this would only churn."""
        return (self.cap + self.ceiling) // 2

    @property
    def backlog(self) -> int:
        """Connections the kernel may complete before libzmq accepts them: they must fit in
        what is left past the ceiling."""
        return max(8, min(SPARE_FDS - 4, (self.room - self.ceiling) // 2))


def monitor_event(frames: list[bytes]) -> tuple[int, int]:
    """``(event, value)`` of one ZeroMQ monitor message: a 16-bit event id and a 32-bit value
    (the fd, for accepts and disconnects). Read here, not with ``zmq.utils.monitor``, whose
    import pulls asyncio and ssl into the daemon, resident for nothing."""
    if len(frames) != 2 or len(frames[0]) != 6:
        raise RuntimeError(f"not a ZeroMQ monitor event ({len(frames)} frames)")
    event, value = struct.unpack("=hi", frames[0])
    return event, value


class ConnectionWatch:
    """The monitor's reader, on its own thread; the serving loop takes its events from
    :attr:`events` when :attr:`wakeup` is readable (:meth:`take`)."""

    def __init__(
        self, context: zmq.Context[Any], router: zmq.Socket[bytes], counts: collections.Counter[str]
    ) -> None:
        self.budget = FdBudget.unbounded()
        self.gate = ListenerGate()
        self.spare = FdReserve(SPARE_FDS)
        self.counts = counts
        for key in COUNTERS:
            counts[key] += 0
        self.events: collections.deque[tuple[int, int]] = collections.deque()
        """``(event, fd)`` of every accept and disconnect, oldest first, for the loop."""
        self._lock = threading.Lock()
        """Held while the monitor is read and its events handed on, by this thread or the
        serving loop's (:meth:`take`)."""
        self._open: set[int] = set()
        self._failed_at = -RESUME_S
        router.monitor(MONITOR_ENDPOINT, _EVENTS)
        self._monitor: zmq.Socket[bytes] = context.socket(zmq.PAIR)
        # No limit on events waiting: a lost DISCONNECTED would leave a closed fd counted, and a
        # later connection on the same fd number shut down by mistake.
        self._monitor.setsockopt(zmq.RCVHWM, 0)
        self._monitor.setsockopt(zmq.LINGER, 0)
        self._monitor.connect(MONITOR_ENDPOINT)
        self._monitor_fd = int(self._monitor.get(zmq.FD))
        """Readable when the monitor may have events: this thread polls it, not the socket, which
        the serving loop's thread also reads (with the lock held), and a ZeroMQ socket is never
        to be used by two threads at once."""
        self.wakeup = WakeUp()
        """Woken for the serving loop when this thread has handed events on."""
        self._stop = WakeUp()
        self.thread = DaemonThread("connections", self._run, ask_stop=self._stop.wake)

    def start(self) -> None:
        """Watch from now on (once the budget is known); a second call does nothing."""
        self.thread.start()

    def take(self) -> list[tuple[int, int]]:
        """Every accept and disconnect libzmq has reported so far, oldest first: those this
        thread has handed on, and those still in the monitor, read here by the caller.

        libzmq reports a connection's accept before its first message can be read, and the
        disconnect of the connection an fd held before that fd can be taken again. So, read
        after a message, the events name the connection it came in on however far this thread
        lags (on a loaded box it can lag past the next connection on the same fd number, whose
        run was then taken for the departed one's and its reply dropped), and a disconnect
        reported before the loop asked is seen (.connections' ``alive``).
        """
        with self._lock:
            try:
                if not self._monitor.closed:
                    self._read(wake=False)
            except Exception:  # as in this thread: a bug here must not end the serving loop
                log.exception("reading the connection monitor failed")
        events, taken = self.events, []
        while events:  # this thread alone takes from it
            taken.append(events.popleft())
        return taken

    def clear_wakeup(self) -> None:
        """Read the wake-up bytes; call before :meth:`take`, so none is left for an event
        still to come."""
        self.wakeup.drain()

    def _run(self) -> None:
        poller = zmq.Poller()
        # Edge-triggered: each wake-up reads the monitor until it is empty (``_read``).
        poller.register(self._monitor_fd, POLLIN)
        stop = self._stop.fileno()
        poller.register(stop, POLLIN)
        while True:
            # First, then after each wake-up: what came before this thread polled is read too.
            failed = False
            try:
                with self._lock:
                    self._read()
                    if self.gate.paused:
                        self._maybe_resume()
            except Exception:  # a bug here must not end the watching: log it and go on
                log.exception("the connection watcher failed")
                failed = True  # events may be left, and the monitor's fd wakes for new ones only
            timeout = round(RESUME_S * 1000) if self.gate.paused else None
            ready = dict(poller.poll(100 if failed else timeout))
            if stop in ready:  # a native socket is answered by its fd
                return

    def _read(self, *, wake: bool = True) -> None:
        """Hand on every event waiting in the monitor (with the lock held); ``wake``: tell the
        serving loop (not when it is the one reading)."""
        handed_on = False
        failed = 0
        ceiling = self.budget.ceiling
        while (event := self._next()) is not None:
            if event == zmq.EVENT_ACCEPT_FAILED:
                # Handled at the first, at once. The retries libzmq made meanwhile are waiting
                # too: counted, and handled again only every so many, in case accept() went
                # on failing after the queue was emptied.
                if failed % STALE_FAILURES == 0:
                    self._out_of_fds()
                failed += 1
                continue
            handed_on = True
            if event == zmq.EVENT_ACCEPTED and len(self._open) >= ceiling:
                # At once, not after the rest of a burst's events: they are connections libzmq
                # has accepted already, and more are coming.
                self._pause()
                past = len(self._open) - ceiling
                self.counts["connections_past_pause"] = max(
                    self.counts["connections_past_pause"], past
                )
        if handed_on and wake:
            self.wakeup.wake()
        if failed:
            self.counts["accept_failures"] += failed

    def _next(self) -> int | None:
        """Read one monitor event, and hand an accept or disconnect on; None when none waits.
        The caller holds the lock."""
        events = self._monitor.getsockopt(EVENTS)
        if not (isinstance(events, int) and events & POLLIN):
            return None
        try:
            frames = self._monitor.recv_multipart(NOBLOCK)
        except zmq.Again:
            return None
        event, fd = monitor_event(frames)
        if event == zmq.EVENT_ACCEPTED:
            self._open.add(fd)
        elif event == zmq.EVENT_DISCONNECTED:
            self._open.discard(fd)
        else:
            return event
        self.events.append((event, fd))
        return event

    def _pause(self) -> None:
        if not self.gate.paused:
            self.counts["connections_paused"] += 1
            self.gate.pause()

    def _out_of_fds(self) -> None:
        """accept() failed for want of fds (a burst faster than the pause, or fds held by
        something else): stop new connections and empty the accept queue, or libzmq spins."""
        self._failed_at = time.monotonic()
        self._pause()
        refused = self.gate.refuse_backlog(self.spare)
        self.spare.take()
        if refused:
            self.counts["connections_refused_at_limit"] += refused
            log.warning("%d connections refused: the fds ran out", refused)

    def _maybe_resume(self) -> None:
        now = time.monotonic()
        if len(self._open) >= self.budget.ceiling or now - self._failed_at < RESUME_S:
            return
        # Free fds for the spares and as many again: a flood of clients retrying at once
        # arrives the moment the gate opens.
        if self.budget.limit - open_fd_count() > FD_RESERVE // 2 + len(self.spare):
            self.spare.take()
            self.gate.resume()

    def close(self) -> None:
        """Stop the thread, open the gate again and let every fd and socket go."""
        self.thread.stop(None)  # never left behind: the sockets it polls are closed next
        self.gate.close()
        self.spare.give_back()
        self._monitor.close(linger=0)
        self.wakeup.close()
        self._stop.close()


__all__ = ["ConnectionWatch", "FdBudget", "monitor_event", "open_fd_count", "raise_fd_limit"]
