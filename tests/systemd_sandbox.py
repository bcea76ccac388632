"""Boots a real systemd as PID 1 of private namespaces and runs edge-agent.service under it.

The service runs from the unmodified unit file: only a drop-in adds what a one-service test boot
needs (no default dependencies, stop the manager when the service ends, logs into files) and, where
a test asks for it, another ExecStart. systemd then applies the unit's whole sandbox itself:
seccomp filters, mount namespaces, the user, the capability bounding set.

The manager sees private copies of /etc, /run, /var and /opt (bind mounts inside its own mount
namespace), so nothing on the host changes except the cgroups systemd creates, which are removed
again when they are empty. Needs root and util-linux's unshare/nsenter.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UNIT_FILE = REPO / "systemd" / "edge-agent.service"
SYSTEMD_BINARY = Path("/lib/systemd/systemd")
CGROUP_ROOT = Path("/sys/fs/cgroup")
# The cgroups a systemd manager creates at the top of each hierarchy it finds.
MANAGER_CGROUPS = ("init.scope", "system.slice")
SERVICE_UID = 990
TEST_DROPIN = "zz-sandbox-test.conf"

_INNER = """
set -eu
# The code under test wherever it lives (/tmp and /root are hidden from the service).
mount --bind "$SOURCE_TREE" "$SANDBOX_ROOT/opt/edge-agent/src"
mount --bind "$SITE_PACKAGES" "$SANDBOX_ROOT/opt/edge-agent/site-packages"
for dir in etc run var; do mount --bind "$SANDBOX_ROOT/$dir" "/$dir"; done
mount --rbind "$SANDBOX_ROOT/opt" /opt
exec "$SYSTEMD_BINARY" --system --unit=edge-agent.service
"""
# Where the service finds them, through the bind mounts above.
SANDBOX_SOURCE = "/opt/edge-agent/src"
SANDBOX_SITE_PACKAGES = "/opt/edge-agent/site-packages"
SANDBOX_PACKAGES = "/opt/edge-agent/packages"


def system_python() -> Path | None:
    """The distribution's Python of our minor version, the one install.sh builds the venv from.

    The test venv's own interpreter may live under /root (pyenv), which ProtectHome hides from the
    service exactly as it would on a Pi, so the sandbox gets a venv of its own made from this one.
    """
    candidate = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    return candidate if candidate.exists() else None


@dataclass
class Sandbox:
    """One boot of systemd running edge-agent.service."""

    root: Path
    service_lines: list[str] = field(default_factory=list)
    unit_lines: list[str] = field(default_factory=list)
    # The manager exits with the service's status when it ends. Off for tests that watch restarts:
    # systemd 252 also runs SuccessAction=/FailureAction= when an automatic restart stops the unit.
    exit_with_service: bool = True
    process: subprocess.Popen[bytes] | None = None
    manager_pid: int | None = None
    cgroups_before: set[Path] = field(default_factory=set)

    @property
    def opt(self) -> Path:
        return self.root / "opt" / "edge-agent"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    def prepare(self) -> None:
        """Lays out /etc, /run, /var and /opt as the installer would leave them."""
        subprocess.run(["cp", "-a", "/etc", str(self.root / "etc")], check=True)
        etc = self.root / "etc"
        with (etc / "passwd").open("a") as passwd:
            passwd.write(
                f"edge-agent:x:{SERVICE_UID}:{SERVICE_UID}:edge-agent daemon:"
                "/var/lib/edge-agent:/usr/sbin/nologin\n"
            )
        with (etc / "group").open("a") as group:
            group.write(f"edge-agent:x:{SERVICE_UID}:\n")
        (self.root / "run").mkdir(mode=0o755)
        for name in ("lib", "cache", "log", "tmp"):
            (self.root / "var" / name).mkdir(parents=True)
        os.chmod(self.root / "var" / "tmp", 0o1777)
        (self.opt / "models").mkdir(parents=True)
        self._make_venv()
        units = etc / "systemd" / "system"
        shutil.copy(UNIT_FILE, units / "edge-agent.service")

    def _make_venv(self) -> None:
        python = system_python()
        if python is None:
            raise RuntimeError(
                f"no /usr/bin/python{sys.version_info.major}."
                f"{sys.version_info.minor} to build the service's venv from"
            )
        venv = self.opt / "venv"
        subprocess.run([str(python), "-m", "venv", "--without-pip", str(venv)], check=True)
        site_packages = next((venv / "lib").glob("python3.*/site-packages"))
        (self.opt / "src").mkdir()
        (self.opt / "site-packages").mkdir()
        # edge_agentd as the installed layout has it (daemon/ -> edge_agentd, skills/ ->
        # edge_agentd.skills), linked into the bound source tree.
        package = self.opt / "packages" / "edge_agentd"
        package.mkdir(parents=True)
        for entry in sorted((REPO / "daemon").iterdir()):
            (package / entry.name).symlink_to(f"{SANDBOX_SOURCE}/daemon/{entry.name}")
        (package / "skills").symlink_to(f"{SANDBOX_SOURCE}/skills")
        # The dependencies come from the test venv's site-packages. The package path goes first,
        # ahead of the editable-install finder that addsitedir brings along (it points at the
        # checkout's own path, which the service may not see).
        (site_packages / "edge_agent_test.pth").write_text(
            f"{SANDBOX_PACKAGES}\nimport site; site.addsitedir({SANDBOX_SITE_PACKAGES!r})\n"
        )
        script = venv / "bin" / "edge-agent"
        script.write_text(
            f"#!{venv}/bin/python\n".replace(str(self.root), "")
            + "import sys\nfrom edge_agentd.cli.main import main\nsys.exit(main())\n"
        )
        script.chmod(0o755)

    def write_dropin(self) -> None:
        dropins = self.root / "etc" / "systemd" / "system" / "edge-agent.service.d"
        dropins.mkdir(exist_ok=True)
        lines = [
            "[Unit]",
            "DefaultDependencies=no",
            *(["SuccessAction=exit-force", "FailureAction=exit-force"] * self.exit_with_service),
            *self.unit_lines,
            "[Service]",
            "StandardOutput=file:/run/edge-agent-test.out",
            "StandardError=file:/run/edge-agent-test.err",
            *self.service_lines,
        ]
        (dropins / TEST_DROPIN).write_text("\n".join(lines) + "\n")

    # The script that lays out the namespaces and starts the manager (install_sandbox has its own).
    inner_script = _INNER

    def boot(self) -> None:
        self.write_dropin()
        self.cgroups_before = manager_cgroups()
        environment = dict(
            os.environ,
            SANDBOX_ROOT=str(self.root),
            SOURCE_TREE=str(REPO),
            SITE_PACKAGES=sysconfig.get_paths()["purelib"],
            SYSTEMD_BINARY=str(SYSTEMD_BINARY),
            # Tells systemd it runs in a container: no hardware setup, logs to stderr.
            container="edge-agent-test",
        )
        self.process = subprocess.Popen(
            [
                "unshare",
                "--mount",
                "--pid",
                "--fork",
                "--mount-proc",
                "--uts",
                "--ipc",
                "--propagation",
                "private",
                "bash",
                "-c",
                self.inner_script,
            ],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=(self.root / "manager.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        self.manager_pid = self._child_of(self.process.pid)

    @staticmethod
    def _child_of(pid: int, timeout_s: float = 10.0) -> int:
        give_up = time.monotonic() + timeout_s
        while time.monotonic() < give_up:
            children = Path(f"/proc/{pid}/task/{pid}/children")
            try:
                found = children.read_text().split()
            except OSError:
                found = []
            if found:
                return int(found[0])
            time.sleep(0.02)
        raise RuntimeError("unshare started no systemd")

    def wait(self, timeout_s: float) -> int:
        """The manager's exit status: the service's own, through SuccessAction/FailureAction."""
        if self.process is None:
            raise RuntimeError("not booted")
        return self.process.wait(timeout=timeout_s)

    def systemctl(self, *args: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
        if self.manager_pid is None:
            raise RuntimeError("not booted")
        return subprocess.run(
            ["nsenter", "-t", str(self.manager_pid), "-m", "-p", "systemctl", "--no-pager", *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def show(self, *properties: str) -> dict[str, str]:
        """``systemctl show`` of the service: each property asked for that the manager reports
        (none while its bus is not up yet)."""
        shown = self.systemctl("show", "edge-agent.service", *(f"-p{p}" for p in properties))
        return dict(line.split("=", 1) for line in shown.stdout.splitlines() if "=" in line)

    def wait_active(self, timeout_s: float) -> str:
        """Polls until the service is active (for Type=notify: READY=1 arrived), or has ended
        with no job left that would start it.

        Just after boot the manager may answer on its bus before it has run the start job it
        queued for the service: the unit is then still ``inactive``, and ``Job`` names that job.
        That is not an end (under load, about one boot in twenty when polled fast), so an
        ``inactive`` or ``failed`` unit counts only once no job is pending.
        """
        give_up = time.monotonic() + timeout_s
        state = ""
        while time.monotonic() < give_up:
            shown = self.show("ActiveState", "Job")
            state = shown.get("ActiveState", "")
            if state == "active":
                return state
            if state in {"failed", "inactive"} and not shown.get("Job"):
                return state
            if self.process is not None and self.process.poll() is not None:
                return "manager exited"
            time.sleep(0.1)
        return f"{state} after {timeout_s} s" if state else f"no answer in {timeout_s} s"

    def output(self, stream: str) -> str:
        path = self.run_dir / f"edge-agent-test.{stream}"
        return path.read_text(errors="replace") if path.exists() else ""

    def diagnostics(self) -> str:
        log = self.root / "manager.log"
        return (
            f"--- systemctl status\n{self._status_now()}\n"
            f"--- service stdout\n{self.output('out')[-4000:]}\n"
            f"--- service stderr\n{self.output('err')[-4000:]}\n"
            f"--- manager\n{log.read_text(errors='replace')[-4000:] if log.exists() else ''}"
        )

    def _status_now(self) -> str:
        """What the manager says of the service now, if it is still there to say it."""
        if self.process is None or self.process.poll() is not None:
            return "(the manager has exited)"
        try:
            shown = self.systemctl("status", "--lines=0", "edge-agent.service", timeout_s=10)
        except subprocess.TimeoutExpired:
            return "(systemctl status did not answer in 10 s)"
        return (shown.stdout + shown.stderr)[-2000:]

    def shutdown(self) -> None:
        """Kills whatever is left (killing a PID namespace's init kills all of it)."""
        if self.process is not None and self.process.poll() is None:
            if self.manager_pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.manager_pid, 9)
            self.process.wait(timeout=30)
        self._remove_new_cgroups()

    def _remove_new_cgroups(self, timeout_s: float = 30.0) -> None:
        """Removes the cgroups this boot's manager created, deepest first, once they are empty.

        Killing the namespace's init returns before the kernel has torn down the processes it
        kills, and a cgroup that still holds one refuses rmdir (EBUSY): each is waited for, so a
        boot leaves no cgroup behind for the next one to inherit."""
        created = manager_cgroups() - self.cgroups_before
        give_up = time.monotonic() + timeout_s
        for directory in sorted(created, key=lambda p: len(p.parts), reverse=True):
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > give_up:
                        print(f"cgroup {directory} left in place: {exc}", file=sys.stderr)
                        break
                    time.sleep(0.05)


def host_runs_systemd() -> bool:
    """True on a machine booted with systemd, whose cgroups a second manager must not touch."""
    return Path("/run/systemd/system").is_dir()


def manager_cgroups() -> set[Path]:
    """Every cgroup under the tops a systemd manager creates (init.scope, system.slice)."""
    found: set[Path] = set()
    for hierarchy in (CGROUP_ROOT, *CGROUP_ROOT.iterdir()):
        for name in MANAGER_CGROUPS:
            top = hierarchy / name
            if top.is_dir():
                found.add(top)
                found.update(path for path in top.rglob("*") if path.is_dir())
    return found
