"""One daemon, one journal: where a daemon's run journal lives by default, and the lock that keeps
a journal file to the one daemon that opened it (docs/protocol.md, "The run journal").

Two daemons of one user (a daemon of one's own and a test daemon, two models on two endpoints)
share the XDG state directory, so there the default file is named after the daemon's endpoint: the
daemon on the default endpoint keeps ``journal.sqlite3`` (so an existing journal stays where it
was), any other endpoint gets ``journal-<endpoint>-<digest>.sqlite3``. Under systemd the state
directory is the unit's own (``StateDirectory=``), so the service keeps ``journal.sqlite3`` on
whatever endpoints its config names. A daemon serving the demo device keeps its own file beside
the machine's (:func:`demo_path`). Keys, runs and ``runs`` listings therefore never cross daemons,
nor the demo device and the machine. Two daemons given the same file anyway (one ``[journal]
path`` in two configs) are kept apart by an exclusive lock on ``<file>.lock``: the second one's
journal is ``degraded`` and says which process holds it, rather than read the first one's keys or
mark its runs interrupted.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from edge_agentd.protocol.endpoints import default_endpoint
from edge_agentd.service.journal.store import JournalUnavailable

FILE_NAME: Final = "journal.sqlite3"
READABLE_CHARS: Final = 40
"""The most of an endpoint spelled out in its journal's name; a digest of the whole follows."""


def default_path(endpoint: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The journal of the daemon on ``endpoint`` (its first): ``$STATE_DIRECTORY/journal.sqlite3``
    under systemd, else in ``$XDG_STATE_HOME/edge-agent/`` (``~/.local/state/edge-agent/``), named
    after the endpoint unless it is the default one."""
    env = os.environ if environ is None else environ
    state_directory = env.get("STATE_DIRECTORY", "").split(":")[0]
    if state_directory:
        return Path(state_directory) / FILE_NAME
    xdg = env.get("XDG_STATE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "state"
    directory = base / "edge-agent"
    if endpoint is None or endpoint == default_endpoint(env):
        return directory / FILE_NAME
    return directory / f"journal-{endpoint_tag(endpoint)}.sqlite3"


def demo_path(journal: Path) -> Path:
    """The journal of a daemon serving the demo device (``serve --demo``) where the machine's
    would be ``journal``: beside it, ``-demo`` before its suffix. Its runs and keys are the demo
    device's own, so a key asked of one never returns the other's answer."""
    return journal.with_name(f"{journal.stem}-demo{journal.suffix}")


def endpoint_tag(endpoint: str) -> str:
    """A file name's part that says which endpoint it is for: readable, and unique to it."""
    where = endpoint.partition("://")[2] or endpoint
    readable = re.sub(r"[^A-Za-z0-9.]+", "-", where).strip("-.")[-READABLE_CHARS:].strip("-.")
    digest = hashlib.sha256(endpoint.encode("utf-8")).hexdigest()[:12]
    return f"{readable}-{digest}" if readable else digest


class JournalLock:
    """An exclusive ``flock`` on ``<journal>.lock`` while a daemon has the journal open; the
    kernel lets it go when the process ends, however it ends (kill -9 included)."""

    def __init__(self, journal: Path) -> None:
        self.path = Path(f"{journal}.lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock (again a no-op once held); JournalUnavailable when another process
        holds it, or the lock file cannot be made."""
        if self._fd is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise JournalUnavailable(f"cannot create {self.path.parent}: {exc}") from None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise JournalUnavailable(f"cannot create {self.path}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise JournalUnavailable(
                f"{self.path.name[: -len('.lock')]} is in use by another edge-agent daemon"
                f"{f' (pid {holder})' if holder else ''}: give each daemon its own [journal] path"
            ) from None
        with contextlib.suppress(OSError):  # the pid is for the message above only
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing lets the flock go
            self._fd = None


def _holder(fd: int) -> str | None:
    """The pid the lock's holder wrote into the file, if it reads as one."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return text if text.isdigit() else None


__all__ = ["FILE_NAME", "JournalLock", "default_path", "demo_path", "endpoint_tag"]
