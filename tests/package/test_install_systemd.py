"""scripts/deploy/install.sh end to end under a real systemd: it installs the checkout, the service
reaches READY, a member of group edge-agent asks with the installed client and gets the answer, a
reinstall keeps the config, and --uninstall removes what it says and keeps what it says.

tests/package/test_install.py covers the script's every branch on a stubbed machine; this is one real run
of it, as on a Pi (tests/install_sandbox.py says what is real and what stands in). The daemon serves
a scripted model (`--model mock:FILE`): what is tested is the install, not a model's answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from install_sandbox import InstallSandbox
from systemd_sandbox import host_runs_systemd, system_python
from wheel_harness import offline_pip_env

# Each install runs pip twice and a reinstall once more: generous for a loaded 2-core machine,
# and there only to end a hung run, never to judge speed.
INSTALL_LIMIT_S = 900
MODELS = "/opt/edge-agent/models"
REPLIES = f"{MODELS}/replies.json"
ASKER = "pi-user"
ANSWER = "I cannot tell: the installed service has no skill for that."
SYSTEM_PYTHON = "/usr/bin/python3"  # install.sh's


def _sandbox_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "booting a systemd in private namespaces needs root (CI runs as root)"
    if host_runs_systemd():
        return "the host runs systemd itself; a second manager must not share its cgroups"
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    theirs = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import sys; print(*sys.version_info[:2], sep='.')"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    if theirs != ours:
        # The wheelhouse holds the compiled wheels of this interpreter's version.
        return f"install.sh builds its venv from {SYSTEM_PYTHON} ({theirs}), the tests run {ours}"
    return None


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[InstallSandbox]:
    reason = _sandbox_unavailable()
    if reason is not None:
        pytest.skip(reason)
    if system_python() is None:
        pytest.fail("no distribution python3 for install.sh to build the venv from")
    box = InstallSandbox(tmp_path / "machine")
    box.root.mkdir()
    box.prepare()
    # Restarted and stopped by install.sh: the manager must outlive the service.
    box.exit_with_service = False
    box.boot()
    try:
        box.wait_manager(timeout_s=120)
        yield box
    finally:
        box.shutdown()


def _install(machine: InstallSandbox, wheelhouse: Path, *args: str) -> tuple[int, str]:
    """install.sh as root on the machine, with pip finding its packages in the wheelhouse."""
    pip = offline_pip_env(wheelhouse)
    env = {name: pip[name] for name in pip if name.startswith("PIP_")}
    done = machine.run("bash", str(machine.installer), *args, env=env, timeout_s=INSTALL_LIMIT_S)
    return done.returncode, done.stdout + done.stderr


def _ask(machine: InstallSandbox, user: str) -> tuple[int, str, str]:
    """`edge-agent ask` as a user of the machine would type it: the client on PATH, no
    endpoint (it finds the service's socket)."""
    done = machine.run(
        "edge-agent",
        "ask",
        "--json",
        "--timeout",
        "120",
        "Are you there?",
        user=user,
        timeout_s=300,
    )
    return done.returncode, done.stdout, done.stderr


def _main_pid(machine: InstallSandbox) -> str:
    return machine.show("MainPID").get("MainPID", "")


@pytest.mark.timeout(4 * INSTALL_LIMIT_S)
def test_install_sh_installs_a_service_that_answers_and_uninstalls_cleanly(
    machine: InstallSandbox, wheelhouse: Path
) -> None:
    added = machine.run("useradd", "--no-create-home", "--shell", "/bin/sh", ASKER)
    assert added.returncode == 0, added.stderr
    models = machine.root / "opt" / "edge-agent" / "models"
    models.mkdir(parents=True, mode=0o755)
    models.parent.chmod(0o755)
    (models / "replies.json").write_text(json.dumps([json.dumps({"final_answer": ANSWER})] * 8))

    status, output = _install(
        machine, wheelhouse, "--model", f"mock:{REPLIES}", "--add-user", ASKER, "--yes"
    )
    assert status == 0, output + machine.diagnostics()
    assert "edge-agent is started." in output, output
    # Type=notify: `enable --now` returned once the daemon said READY=1.
    assert machine.show("ActiveState")["ActiveState"] == "active", machine.diagnostics()

    # The venv is a regular install from the distribution's Python, nothing of the checkout.
    venv = machine.root / "opt" / "edge-agent" / "venv"
    assert "home = /usr/bin\n" in (venv / "pyvenv.cfg").read_text()
    site = next((venv / "lib").glob("python3.*/site-packages"))
    assert (site / "edge_agentd" / "service" / "triggers" / "__init__.py").is_file()
    assert not [p for p in site.glob("*.pth") if "checkout" in p.read_text(errors="replace")]
    assert os.readlink(machine.root / "usr" / "local" / "bin" / "edge-agent") == (
        "/opt/edge-agent/venv/bin/edge-agent"
    )

    # A member of the group asks, with the client on PATH, and gets the answer.
    code, stdout, stderr = _ask(machine, ASKER)
    assert code == 0, stdout + stderr + machine.diagnostics()
    first = json.loads(stdout)
    assert first["answer"] == ANSWER, first
    # Someone outside the group cannot reach the socket at all.
    code, stdout, stderr = _ask(machine, "nobody")
    assert code == 69, stdout + stderr  # daemon unavailable

    # A reinstall keeps the config as the user left it, and restarts into the new install.
    config = machine.root / "etc" / "edge-agent" / "config.toml"
    config.write_text(config.read_text() + "\n# kept across reinstalls\n")
    edited = config.read_bytes()
    before = _main_pid(machine)
    status, output = _install(machine, wheelhouse, "--yes")
    assert status == 0, output + machine.diagnostics()
    assert "= /etc/edge-agent/config.toml exists; kept as it is" in output, output
    assert config.read_bytes() == edited
    assert machine.show("ActiveState")["ActiveState"] == "active", machine.diagnostics()
    assert _main_pid(machine) not in {before, "", "0"}, machine.diagnostics()
    code, stdout, stderr = _ask(machine, ASKER)
    assert code == 0, stdout + stderr + machine.diagnostics()
    second = json.loads(stdout)
    assert second["answer"] == ANSWER

    # --uninstall removes the unit, the venv and the client link; keeps config, state, the user.
    status, output = _install(machine, wheelhouse, "--uninstall")
    assert status == 0, output + machine.diagnostics()
    assert "add --purge to remove them" in output, output
    assert not (machine.root / "etc" / "systemd" / "system" / "edge-agent.service").exists()
    assert not venv.exists()
    assert not (machine.root / "usr" / "local" / "bin" / "edge-agent").is_symlink()
    gone = machine.systemctl("is-active", "edge-agent.service").stdout.strip()
    assert gone in {"inactive", "unknown"}, machine.diagnostics()
    assert config.read_bytes() == edited
    assert (models / "replies.json").exists()
    assert machine.run("getent", "passwd", "edge-agent").returncode == 0
    # The run journal stays, with both runs in it.
    journal = machine.root / "var" / "lib" / "edge-agent" / "journal.sqlite3"
    with contextlib.closing(sqlite3.connect(f"file:{journal}?mode=ro", uri=True)) as db:
        kept = {row[0]: row[1:] for row in db.execute("SELECT id, state, answer FROM runs")}
    assert kept[first["run_id"]] == ("done", ANSWER), kept
    assert kept[second["run_id"]] == ("done", ANSWER), kept
