"""Pausing new connections without touching open ones: the daemon's answer to running out of fds.

libzmq accepts every connection itself, and ``zmq_unbind`` would close every connection accepted
on that endpoint with its listener. When accept() fails for want of fds, libzmq retries at once
for as long as it fails: on tcp that spins a core, on ipc it aborts the process. So before the
fds run out the daemon stops new connections from arriving at all, and lets them in again once
fds are free (docs/protocol.md, "Limits and hostile input"):

- ipc: the socket file is renamed aside, so a client's connect() finds nothing there and its
  ZeroMQ socket tries again after ``ZMQ_RECONNECT_IVL``; renamed back, it connects.
- tcp: a socket filter on the listening socket drops every packet that reaches it: new
  connections' SYNs, and the ACKs that would complete the handshakes already begun (with SYN
  cookies, every client whose SYN came before the pause: a burst of 600 got 150 past a SYN-only
  filter). So the kernel completes no connection while paused, and the clients' own kernels
  retry, with backoff. A connection completed before the pause has its own socket, which the
  filter does not reach; one completed as the filter goes on may inherit it and hear nothing,
  and libzmq closes it after its handshake interval (its client reconnects, its request unsent).

An abstract ipc name (``ipc://@name``) can be neither renamed nor filtered: it is never paused.

If the fds run out all the same (a burst faster than the pause, or fds held by something else),
:meth:`ListenerGate.refuse_backlog` empties the kernel's queue of completed tcp connections
itself, so libzmq's listener is no longer readable and its accept() retries stop.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import socket
import struct
import threading
from pathlib import Path

log = logging.getLogger(__name__)

SO_ATTACH_FILTER = 26
SO_DETACH_FILTER = 27
# ret #0: drop.
_DROP_ALL = [(0x06, 0, 0, 0)]
_PROGRAM = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in _DROP_ALL))
_FPROG = struct.pack("HL", len(_DROP_ALL), ctypes.addressof(_PROGRAM))
_RESET = struct.pack("ii", 1, 0)
"""SO_LINGER on, 0 s: close() resets the connection, so a refused one leaves no TIME_WAIT."""
_OUT_OF_FDS = (errno.EMFILE, errno.ENFILE)


def _listening_socket(port: int) -> socket.socket | None:
    """A duplicate of this process's listening TCP socket on ``port`` (libzmq's), or None."""
    for name in os.listdir("/proc/self/fd"):
        try:
            duplicate = os.dup(int(name))
        except (OSError, ValueError):
            continue
        try:
            sock = socket.socket(fileno=duplicate)
        except OSError:
            os.close(duplicate)
            continue
        try:
            listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
            inet = sock.family in (socket.AF_INET, socket.AF_INET6)
            if listening and inet and sock.getsockname()[1] == port:
                # libzmq's listener is non-blocking already (the flag is the file's, shared
                # with this duplicate); the socket object is told so too.
                sock.setblocking(False)
                return sock
        except OSError as exc:
            log.debug("fd %s is not a socket we listen on: %s", name, exc)
        sock.close()
    return None


class ListenerGate:
    """Every bound endpoint's way in, open or paused.

    The connection watcher's thread pauses and resumes it while the serving loop's thread may
    still be adding endpoints: a lock keeps them apart.
    """

    def __init__(self) -> None:
        self.paused = False
        self._ipc: list[Path] = []
        self._tcp: list[socket.socket] = []
        self._lock = threading.Lock()

    def add(self, endpoint: str) -> None:
        """Follow ``endpoint`` (as LAST_ENDPOINT names it), once it is bound."""
        with self._lock:
            self._add(endpoint)

    def _add(self, endpoint: str) -> None:
        if endpoint.startswith("ipc://"):
            path = endpoint[len("ipc://") :]
            if not path.startswith("@"):
                self._ipc.append(Path(path))
        elif endpoint.startswith("tcp://"):
            port = endpoint.rpartition(":")[2]
            listening = _listening_socket(int(port)) if port.isdigit() else None
            if listening is None:
                log.warning("cannot find the listening socket of %s: it is never paused", endpoint)
            else:
                self._tcp.append(listening)

    def pause(self) -> None:
        with self._lock:
            self._pause()

    def _pause(self) -> None:
        if self.paused:
            return
        self.paused = True
        for path in self._ipc:
            try:
                path.rename(_aside(path))
            except OSError as exc:
                log.warning("cannot pause ipc://%s: %s", path, exc)
        for sock in self._tcp:
            try:
                sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, _FPROG)
            except OSError as exc:
                log.warning("cannot pause %s: %s", sock.getsockname(), exc)
        log.warning("new connections paused: the fds are running out")

    def resume(self) -> None:
        with self._lock:
            self._resume()

    def _resume(self) -> None:
        if not self.paused:
            return
        self.paused = False
        for path in self._ipc:
            try:
                _aside(path).rename(path)
            except OSError as exc:
                log.error("cannot reopen ipc://%s: %s", path, exc)
        for sock in self._tcp:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, SO_DETACH_FILTER, 0)
        log.info("new connections let in again")

    def refuse_backlog(self, spare: FdReserve) -> int:
        """Accept and reset every tcp connection the kernel completed but libzmq could not
        accept for want of fds; returns how many.

        They sent nothing yet: ZeroMQ's handshake waits for the daemon's greeting, so their
        requests are still on the client's side, and its socket reconnects later (with the gate
        paused, its packets are dropped, so its kernel backs off). Each accept() needs one fd:
        ``spare`` gives them, one at a time, for as long as libzmq takes the freed ones itself.
        """
        refused = 0
        with self._lock:
            for listener in self._tcp:
                while True:
                    try:
                        connection, _ = listener.accept()
                    except BlockingIOError:
                        break  # the queue is empty: libzmq's listener is no longer readable
                    except OSError as exc:
                        if exc.errno == errno.ECONNABORTED:
                            continue
                        if exc.errno in _OUT_OF_FDS and spare.release_one():
                            continue
                        log.warning("cannot empty the accept queue: %s", exc)
                        break
                    with connection, contextlib.suppress(OSError):
                        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
                    refused += 1
        return refused

    def close(self) -> None:
        """Open again (so libzmq removes the ipc files it made) and let the duplicates go."""
        with self._lock:
            self._resume()
            for sock in self._tcp:
                sock.close()
            self._tcp.clear()


class FdReserve:
    """A few fds held open on /dev/null, given back when accept() fails for want of fds: then
    libzmq accepts the connections the kernel already completed (the backlog), and stops
    retrying, while the gate keeps more from coming. Taken again once fds are free."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._fds: list[int] = []

    def __len__(self) -> int:
        return len(self._fds)

    def take(self) -> None:
        while len(self._fds) < self.count:
            try:
                self._fds.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                return

    def release_one(self) -> bool:
        """Give back one fd; False when none is left."""
        if not self._fds:
            return False
        os.close(self._fds.pop())
        return True

    def give_back(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()


def _aside(path: Path) -> Path:
    return path.with_name(path.name + ".paused")


__all__ = ["FdReserve", "ListenerGate"]
