"""sd_notify without libsystemd: tell systemd we are ready, alive, busy loading, or stopping.

Outside systemd (no ``NOTIFY_SOCKET``) every call does nothing, so the daemon runs the same under a
terminal, a test, or a container.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger(__name__)


class Notifier:
    """Sends sd_notify datagrams to ``$NOTIFY_SOCKET``; a no-op when it is not set."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        # An abstract socket is spelled with a leading "@" and addressed with a leading NUL.
        self._address: str | bytes | None = (
            None if not address else b"\0" + address[1:].encode() if address[0] == "@" else address
        )
        self.watchdog_s = self._watchdog_seconds(env)
        self._socket: socket.socket | None = None
        self._failed = False

    @staticmethod
    def _watchdog_seconds(env: Mapping[str, str]) -> float | None:
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        if not usec.isdigit() or int(usec) == 0:
            return None
        if pid and pid != str(os.getpid()):
            return None  # the watchdog is meant for another process, e.g. our parent
        return int(usec) / 1_000_000

    @property
    def enabled(self) -> bool:
        return self._address is not None

    @property
    def watchdog_interval_s(self) -> float | None:
        """How often to send WATCHDOG=1: half the timeout, as sd_watchdog_enabled(3) advises."""
        return None if self.watchdog_s is None else self.watchdog_s / 2

    def notify(self, *assignments: str) -> bool:
        """Send ``KEY=VALUE`` lines in one datagram; False when nothing was sent."""
        if self._address is None:
            return False
        if any("\n" in a for a in assignments):
            raise ValueError("sd_notify assignments are single lines")
        try:
            if self._socket is None:
                self._socket = socket.socket(
                    socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC
                )
            self._socket.sendto("\n".join(assignments).encode(), self._address)
        except OSError as exc:
            if not self._failed:
                log.warning("sd_notify to %r failed: %s", self._address, exc)
                self._failed = True
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.notify(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def extend_timeout(self, seconds: float) -> bool:
        return self.notify(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}")

    def stopping(self, status: str = "stopping") -> bool:
        return self.notify("STOPPING=1", f"STATUS={status}")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


__all__ = ["Notifier"]
