"""Where the daemon may load code and config from: only places that root or its own user control.

The rule is sshd's for ``authorized_keys`` (``StrictModes``). A plugin file, a skills directory
or the config file, and every directory above it up to ``/``, must be

- owned by root or by the user the daemon runs as (its effective uid), and
- not writable by group or others.

A directory *above* it that others may write is accepted only with its sticky bit set (``/tmp``
is 1777): there nobody but the owner of an entry can rename or remove it, so the entry stays
ours. The file or directory itself is never accepted writable by group or others, sticky or not.
Symlinks are resolved first, and the place they lead to is what is checked.

Anyone who could change such a place could run code as the daemon (as root, for a root daemon),
so a place that fails the rule is refused with a message that names it and says why.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path


class UnsafePath(Exception):
    """A file or directory that others could change; the message names it and the fix."""


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def entry_problem(path: Path, info: os.stat_result, *, above: bool = False) -> str | None:
    """Why ``path`` (with ``info``, its stat) fails the rule, or None if it passes.

    ``above`` marks a directory above the checked place, which may be sticky and world-writable.
    """
    me = os.geteuid()
    if info.st_uid not in (0, me):
        return (
            f"{path} is owned by {_user(info.st_uid)}, not by root or the daemon's user "
            f"{_user(me)}, so that user could change what the daemon runs; chown it"
        )
    writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not writable:
        return None
    if above and stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX:
        return None
    who = {
        stat.S_IWGRP: "its group",
        stat.S_IWOTH: "others",
        stat.S_IWGRP | stat.S_IWOTH: "its group and others",
    }[writable]
    return (
        f"{path} is writable by {who} (mode {stat.S_IMODE(info.st_mode):04o}), so others could "
        f"change what the daemon runs; run chmod go-w {path}"
    )


def check_safe(path: str | os.PathLike[str]) -> None:
    """Raise :class:`UnsafePath` unless ``path`` and every directory above it pass the rule.

    A path that cannot be examined (missing, no permission) raises :class:`OSError`.
    """
    real = Path(os.path.realpath(path))
    problem = entry_problem(real, os.stat(real))
    for parent in real.parents:
        if problem is not None:
            break
        problem = entry_problem(parent, os.stat(parent), above=True)
    if problem is not None:
        via = f"{path} leads to {real}: " if str(real) != os.path.abspath(path) else ""
        raise UnsafePath(f"{via}{problem}")


__all__ = ["UnsafePath", "check_safe", "entry_problem"]
