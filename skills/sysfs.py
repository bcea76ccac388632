"""Safe, bounded reads under a configured root such as ``/sys`` or ``/proc``.

Every path is built from constant parts and from names the kernel listed, never from text the model
wrote. Symlinks are followed only while they stay inside the root, and no read is larger than a
sysfs attribute can be (one page), so a hostile or broken tree cannot make a skill read elsewhere,
block on a pipe, or load a huge file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

DEFAULT_SYSFS_ROOT = "/sys"
DEFAULT_PROC_ROOT = "/proc"
SYSFS_ROOT_ENV = "EDGE_AGENT_SYSFS_ROOT"
PROC_ROOT_ENV = "EDGE_AGENT_PROC_ROOT"
MAX_READ_BYTES = 4096
"""A sysfs attribute is at most one page; anything longer is not what we expect to read."""


class SysfsError(Exception):
    """A file under the root could not be read; the message says which and why.

    ``missing`` is true when the file or its device is simply not there (any more).
    """

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


def resolve_root(
    configured: str | os.PathLike[str] | None,
    env_name: str,
    default: str,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """The root to read under: the configured one, else the environment variable, else default."""
    if configured is not None:
        return Path(configured)
    value = (os.environ if environ is None else environ).get(env_name, "")
    return Path(value) if value.strip() else Path(default)


class Root:
    """A directory tree that may only be read inside itself, in small pieces."""

    def __init__(self, path: str | os.PathLike[str], max_bytes: int = MAX_READ_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        return f"Root({str(self.path)!r})"

    def _real_root(self) -> str:
        return os.path.realpath(self.path)

    def _inside(self, *parts: str) -> str:
        """The real path of ``root/parts``, refusing anything that leaves the root."""
        for part in parts:
            if not part or part in (".", "..") or "/" in part or "\0" in part:
                raise SysfsError(f"refusing path component {part!r}")
        real_root = self._real_root()
        real = os.path.realpath(os.path.join(real_root, *parts))
        if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
            shown = os.path.join(str(self.path), *parts)
            raise SysfsError(f"{shown} leads outside {self.path}")
        return real

    def exists(self, *parts: str) -> bool:
        try:
            return os.path.exists(self._inside(*parts))
        except SysfsError:
            return False

    def is_dir(self, *parts: str) -> bool:
        try:
            return os.path.isdir(self._inside(*parts))
        except SysfsError:
            return False

    def list_dir(self, *parts: str) -> list[str]:
        """The entries of a directory, sorted; an absent directory has none."""
        try:
            return sorted(os.listdir(self._inside(*parts)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            shown = os.path.join(str(self.path), *parts)
            raise SysfsError(f"cannot list {shown}: {exc.strerror or exc}") from exc

    def read_text(self, *parts: str) -> str:
        """A small file's text, stripped; raises :class:`SysfsError` saying what went wrong."""
        shown = os.path.join(str(self.path), *parts)
        real = self._inside(*parts)
        try:
            # O_NONBLOCK: a FIFO planted in the tree must not block the reading thread forever.
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError as exc:
            raise SysfsError(f"{shown} does not exist", missing=True) from exc
        except OSError as exc:
            raise SysfsError(f"cannot open {shown}: {exc.strerror or exc}") from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SysfsError(f"{shown} is not a regular file")
            data = b""
            while len(data) <= self.max_bytes:
                chunk = os.read(fd, self.max_bytes + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        except SysfsError:
            raise
        except OSError as exc:
            raise SysfsError(f"cannot read {shown}: {exc.strerror or exc}") from exc
        finally:
            os.close(fd)
        if len(data) > self.max_bytes:
            raise SysfsError(f"{shown} is larger than {self.max_bytes} bytes")
        return data.decode("utf-8", errors="replace").strip()


__all__ = [
    "DEFAULT_PROC_ROOT",
    "DEFAULT_SYSFS_ROOT",
    "MAX_READ_BYTES",
    "PROC_ROOT_ENV",
    "SYSFS_ROOT_ENV",
    "Root",
    "SysfsError",
]
