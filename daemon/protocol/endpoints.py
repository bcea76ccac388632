"""Where the daemon listens: the default ipc socket, loopback-only TCP, one daemon per socket."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

# logging, socket, ipaddress and dataclasses are imported where they are used: the client
# commands import this module, and start faster without them (scripts/bench/bench_cli_start.py).

SOCKET_NAME = "agent.sock"


class EndpointError(Exception):
    """An endpoint cannot be used: malformed, not allowed, or already served by another daemon."""


class EndpointInUse(EndpointError):
    """Another daemon is already serving this endpoint."""


def runtime_directory(environ: Mapping[str, str] | None = None) -> Path:
    """``$RUNTIME_DIRECTORY`` (systemd), else ``$XDG_RUNTIME_DIR/edge-agent``, else /tmp's."""
    env = os.environ if environ is None else environ
    systemd_dir = env.get("RUNTIME_DIRECTORY", "").split(":")[0]
    if systemd_dir and Path(systemd_dir).is_dir():
        return Path(systemd_dir)
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / "edge-agent"
    return Path(f"/tmp/edge-agent-{os.getuid()}")


def default_endpoint(environ: Mapping[str, str] | None = None) -> str:
    return f"ipc://{runtime_directory(environ) / SOCKET_NAME}"


SERVICE_RUNTIME_DIRECTORY = Path("/run/edge-agent")
"""Where the systemd unit's ``RuntimeDirectory=edge-agent`` puts the service's socket."""


def client_endpoint(environ: Mapping[str, str] | None = None) -> str:
    """Where a client looks by default: a daemon of the user's own (``make run``) if its socket
    is there, else the system service's socket when the service is installed."""
    own = runtime_directory(environ) / SOCKET_NAME
    if not os.path.lexists(own) and os.path.isdir(SERVICE_RUNTIME_DIRECTORY):
        return f"ipc://{SERVICE_RUNTIME_DIRECTORY / SOCKET_NAME}"
    return f"ipc://{own}"


def check_endpoint(endpoint: str, *, allow_remote: bool) -> str:
    """The endpoint if it is ipc:// or tcp:// on loopback (or anywhere when ``allow_remote``)."""
    if endpoint.startswith("ipc://"):
        if len(endpoint) <= len("ipc://") or endpoint.startswith("ipc://@"):
            raise EndpointError(f"{endpoint!r}: an ipc endpoint needs a file path")
        return endpoint
    if not endpoint.startswith("tcp://"):
        raise EndpointError(f"{endpoint!r}: endpoints are ipc://PATH or tcp://HOST:PORT")
    host, _, port = endpoint[len("tcp://") :].rpartition(":")
    if not host or not (port == "*" or (port.isdigit() and 0 < int(port) < 65536)):
        raise EndpointError(f"{endpoint!r}: expected tcp://HOST:PORT")
    if allow_remote:
        return endpoint
    import ipaddress  # noqa: PLC0415

    host = host.strip("[]")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise EndpointError(
            f"{endpoint!r} is not a loopback address; set [daemon] allow_remote = true to listen "
            "beyond this machine (the protocol has no authentication)"
        )
    return endpoint


def _prepare_directory(directory: Path) -> None:
    if directory.is_dir():
        info = directory.stat()
        if info.st_uid != os.getuid() and str(directory).startswith("/tmp/"):
            raise EndpointError(f"{directory} belongs to another user; refusing to use it")
        return
    try:
        directory.mkdir(mode=0o700, parents=True)
    except OSError as exc:
        raise EndpointError(f"cannot create {directory}: {exc}") from None


def _peer_listening(path: Path) -> bool:
    import socket  # noqa: PLC0415

    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        probe.settimeout(1.0)
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


class IpcClaim:
    """An ipc socket path this daemon holds: a lock beside it, and the file removed on release."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: int | None = None
        self._inode: int | None = None

    def __repr__(self) -> str:
        return f"IpcClaim(path={self.path!r})"

    def acquire(self) -> None:
        _prepare_directory(self.path.parent)
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise EndpointError(f"cannot open {lock_path}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise EndpointInUse(
                f"another edge-agent is already serving ipc://{self.path} (it holds {lock_path})"
            ) from None
        self._lock = fd
        if self.path.exists() or self.path.is_symlink():
            if _peer_listening(self.path):
                self.release()
                raise EndpointInUse(f"another process is already listening on ipc://{self.path}")
            if not stat.S_ISSOCK(self.path.lstat().st_mode):
                self.release()
                raise EndpointError(
                    f"{self.path} exists and is not a socket; refusing to replace it"
                )
            import logging  # noqa: PLC0415

            logging.getLogger(__name__).info(
                "removing the stale socket %s left by a daemon that did not exit", self.path
            )
            self.path.unlink()

    def bound(self) -> None:
        """Record the socket file that bind created, so release removes that file and no other."""
        with contextlib.suppress(OSError):
            self._inode = self.path.lstat().st_ino

    def release(self) -> None:
        if self._inode is not None:
            with contextlib.suppress(OSError):
                if self.path.lstat().st_ino == self._inode:
                    self.path.unlink()
            self._inode = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


_WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "*": "127.0.0.1"}


def own_endpoint(bound: Sequence[str]) -> str | None:
    """Where a client inside the daemon (the MQTT bridge, the MCP server) reaches it: its ipc
    socket if it has one, else its first tcp one (a wildcard host reached on loopback); None
    when it has neither."""
    for endpoint in bound:
        if endpoint.startswith("ipc://"):
            return endpoint
    for endpoint in bound:
        if endpoint.startswith("tcp://"):
            host, _, port = endpoint[len("tcp://") :].rpartition(":")
            return f"tcp://{_WILDCARD_HOSTS.get(host, host)}:{port}"
    return None


def ipc_path(endpoint: str) -> Path | None:
    return Path(endpoint[len("ipc://") :]) if endpoint.startswith("ipc://") else None


__all__ = [
    "EndpointError",
    "EndpointInUse",
    "IpcClaim",
    "check_endpoint",
    "client_endpoint",
    "default_endpoint",
    "ipc_path",
    "own_endpoint",
    "runtime_directory",
]
