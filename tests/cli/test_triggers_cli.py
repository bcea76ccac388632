"""``edge-agent triggers`` and ``edge-agent watch`` against a real serving loop."""

from __future__ import annotations

import json
import select
import signal
import subprocess
from typing import Any

import pytest
from daemon_harness import answer, call, edge_agent_command, wait_for
from triggers_harness import PROBE, Probe, builtin_registry

from edge_agentd.cli.main import main
from edge_agentd.skills.demo import SysfsTree

CONFIG = f"""
[[triggers]]
name = "freezer"
when = {{ skill = "read_sensor", arguments = {{ name = "{PROBE}" }}, above = -10.0, check_every = "1s" }}
query = "Is the freezer too warm?"

[[triggers]]
name = "morning"
at = ["07:30"]
query = "Summarise the night."
"""


def test_triggers_lists_each_trigger(
    scripted_daemon: Any, sysfs: SysfsTree, capsys: pytest.CaptureFixture[str]
) -> None:
    Probe(sysfs, -20.0)
    server, endpoint = scripted_daemon(config=CONFIG, registry=builtin_registry(sysfs.root))
    wait_for(lambda: server.triggers.runner.records["freezer"].checks >= 1, 10)
    wait_for(lambda: server.triggers.runner.records["freezer"].reading is not None, 10)
    assert main(["triggers", "--json", "--endpoint", endpoint]) == 0
    listed = {entry["name"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert listed["freezer"]["state"] == "armed"
    assert listed["freezer"]["reading"]["value"] == -20.0
    assert "T07:30:00" in listed["morning"]["next_fire"]
    assert main(["triggers", "--endpoint", endpoint]) == 0
    text = capsys.readouterr().out
    assert "freezer: armed (when read_sensor.value above -10)" in text
    assert "reading: -20 °C from read_sensor" in text
    assert "morning: armed (at 07:30)" in text


def test_watch_prints_each_result_until_ctrl_c(scripted_daemon: Any, sysfs: SysfsTree) -> None:
    probe = Probe(sysfs, -20.0)
    server, endpoint = scripted_daemon(
        [call("read_sensor", name=PROBE), answer("It is -4 °C in the freezer.")],
        config=CONFIG,
        registry=builtin_registry(sysfs.root),
    )
    process = subprocess.Popen(
        [*edge_agent_command("watch", "--json", "--trigger", "freezer", "--endpoint", endpoint)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # A watch hears the results that come after it opens: the freezer warms once the
        # daemon holds it (a loaded machine starts the client slowly).
        wait_for(lambda: len(server.triggers.watches) >= 1, 120)
        probe.set(-4.0)
        assert process.stdout is not None
        assert select.select([process.stdout], [], [], 30)[0], "watch printed nothing"
        line = process.stdout.readline()
        result = json.loads(line)
        assert result["trigger"] == "freezer" and result["answer"] == "It is -4 °C in the freezer."
        assert result["reading"]["value"] == -4.0
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr


def test_watch_of_an_unknown_trigger_exits_65(scripted_daemon: Any, sysfs: SysfsTree) -> None:
    Probe(sysfs)
    _, endpoint = scripted_daemon(config=CONFIG, registry=builtin_registry(sysfs.root))
    assert main(["watch", "--trigger", "nope", "--endpoint", endpoint]) == 65


def test_watch_says_what_it_waits_for_before_anything_fires(
    scripted_daemon: Any, sysfs: SysfsTree
) -> None:
    # Nothing fires here (-20 °C is below the threshold): watch must not look hung meanwhile.
    Probe(sysfs, -20.0)
    _, endpoint = scripted_daemon(config=CONFIG, registry=builtin_registry(sysfs.root))
    process = subprocess.Popen(
        [*edge_agent_command("watch", "--endpoint", endpoint)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        assert select.select([process.stderr], [], [], 30)[0], "watch said nothing while waiting"
        said = process.stderr.readline()
    finally:
        process.send_signal(signal.SIGINT)
        stdout, _ = process.communicate(timeout=20)
    assert said.startswith(f"edge-agent: watching {endpoint} for the runs of 2 triggers"), said
    assert "(freezer, morning)" in said and "Ctrl-C" in said
    assert (process.returncode, stdout) == (0, "")  # stdout is the results' alone
