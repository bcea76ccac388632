"""A machine for install.sh under a real systemd: the sandbox of systemd_sandbox, bare.

Sandbox lays out what install.sh would have left (the user, a venv, the unit) and boots straight
into edge-agent.service. This one lays out none of it: systemd boots into an empty target and
waits, and install.sh, run as root inside the manager's namespaces, does the rest for real:
useradd and usermod, a venv from /usr/bin/python3, pip installing the checkout, the config, the
unit, and `systemctl enable --now`. Its /etc, /run, /var, /opt and /usr/local/bin are private
copies, so the host keeps none of it.

What is not real: apt-get is a stand-in that refuses (install.sh calls it only when a Debian
package it needs is missing, and `make deps` installs them), and pip finds its packages in a
local wheelhouse (wheel_harness) instead of the index.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from systemd_sandbox import Sandbox

IDLE_TARGET = "sandbox-idle.target"

_INSTALL_INNER = """
set -eu
# The checkout, read-only: install.sh builds from a copy and must never write into it.
mount --bind "$SOURCE_TREE" "$SANDBOX_ROOT/checkout"
mount -o remount,bind,ro "$SANDBOX_ROOT/checkout"
# dpkg's database, read-only, so install.sh sees which Debian packages are installed.
mount --bind /var/lib/dpkg "$SANDBOX_ROOT/var/lib/dpkg"
mount -o remount,bind,ro "$SANDBOX_ROOT/var/lib/dpkg"
for dir in etc run; do mount --bind "$SANDBOX_ROOT/$dir" "/$dir"; done
mount --rbind "$SANDBOX_ROOT/var" /var
mount --rbind "$SANDBOX_ROOT/opt" /opt
mount --bind "$SANDBOX_ROOT/usr/local/bin" /usr/local/bin
exec "$SYSTEMD_BINARY" --system --unit=sandbox-idle.target
"""

_APT_GET = """#!/bin/sh
echo "apt-get is a stand-in in this test, and install.sh called it: apt-get $*" >&2
echo "install the Debian packages install.sh needs on this machine (make deps does)" >&2
exit 1
"""
# What a login shell of a user on the machine has; nothing of the test's environment.
USER_PATH = "/usr/local/bin:/usr/bin:/bin"
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class InstallSandbox(Sandbox):
    """A Debian machine with systemd running and nothing of edge-agent on it yet."""

    inner_script = _INSTALL_INNER

    @property
    def checkout(self) -> Path:
        """The checkout as the machine sees it (read-only)."""
        return self.root / "checkout"

    @property
    def installer(self) -> Path:
        return self.checkout / "scripts" / "deploy" / "install.sh"

    def prepare(self) -> None:
        subprocess.run(["cp", "-a", "/etc", str(self.root / "etc")], check=True)
        etc = self.root / "etc"
        # A developer's machine may have had edge-agent installed: this one has not.
        for leftover in ("edge-agent", "systemd/system/edge-agent.service"):
            path = etc / leftover
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        (etc / "systemd" / "system" / IDLE_TARGET).write_text(
            "[Unit]\nDescription=Nothing but the manager, for install.sh to add to\n"
        )
        (self.root / "run").mkdir(mode=0o755)
        for name in ("lib/dpkg", "cache", "log", "tmp"):
            (self.root / "var" / name).mkdir(parents=True)
        (self.root / "var" / "tmp").chmod(0o1777)
        (self.root / "opt").mkdir(mode=0o755)
        (self.root / "usr" / "local" / "bin").mkdir(parents=True)
        self.checkout.mkdir()
        stubs = self.root / "stubs"
        stubs.mkdir()
        (stubs / "apt-get").write_text(_APT_GET)
        (stubs / "apt-get").chmod(0o755)

    def wait_manager(self, timeout_s: float) -> None:
        """Polls until the manager answers on its bus and has reached its idle target."""
        give_up = time.monotonic() + timeout_s
        while time.monotonic() < give_up:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the manager exited\n{self.diagnostics()}")
            shown = self.systemctl("show", IDLE_TARGET, "-pActiveState")
            if shown.stdout.strip() == "ActiveState=active":
                return
            time.sleep(0.1)
        raise RuntimeError(f"the manager did not come up in {timeout_s} s\n{self.diagnostics()}")

    def ids(self, user: str) -> tuple[int, int]:
        """``user``'s uid and primary gid in the machine's /etc/passwd."""
        for line in (self.root / "etc" / "passwd").read_text().splitlines():
            fields = line.split(":")
            if fields[0] == user:
                return int(fields[2]), int(fields[3])
        raise KeyError(f"no user {user} on the machine")

    def run(
        self,
        *command: str,
        user: str | None = None,
        env: dict[str, str] | None = None,
        timeout_s: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        """``command`` on the machine: as root with root's PATH (the stand-in apt-get first), or
        as ``user`` with the groups /etc/group gives it, as after a login."""
        if self.manager_pid is None:
            raise RuntimeError("not booted")
        if user is None:
            identity: list[str] = []
            path = f"{self.root / 'stubs'}:{ROOT_PATH}"
            home = "/root"
        else:
            uid, gid = self.ids(user)
            identity = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups", "--"]
            path, home = USER_PATH, "/"
        environment = [f"{name}={value}" for name, value in (env or {}).items()]
        return subprocess.run(
            [
                "nsenter",
                "-t",
                str(self.manager_pid),
                "-m",
                "-p",
                *identity,
                "env",
                "-i",
                f"PATH={path}",
                f"HOME={home}",
                "LANG=C.UTF-8",
                *environment,
                *command,
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
