"""The one wake-up pipe: a byte written by any thread (or a signal handler) makes a poll return.

The serving loop, the connection watcher (towards the loop, and to be stopped) and the MQTT
bridge's link each poll ZeroMQ sockets and an OS file at once: :class:`WakeUp` is that file.
"""

from __future__ import annotations

import contextlib
import socket


class WakeUp:
    """A non-blocking socketpair: :meth:`wake` from anywhere, :meth:`drain` on the poller's
    thread."""

    def __init__(self) -> None:
        self._read, self._write = socket.socketpair()
        self._read.setblocking(False)
        self._write.setblocking(False)

    def fileno(self) -> int:
        """What the polling thread registers with its poller (readable once woken)."""
        return self._read.fileno()

    def wake(self) -> None:
        # A full pipe already holds a wake-up, and a closed one belongs to a poll that has ended.
        with contextlib.suppress(OSError):
            self._write.send(b"\0")

    def drain(self) -> None:
        """Read every wake-up so far, so the next poll waits for a new one."""
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while self._read.recv(4096):
                pass

    def close(self) -> None:
        self._read.close()
        self._write.close()


__all__ = ["WakeUp"]
