"""``edge-agent serve --demo``: a newcomer's machine without sensors answers from a simulated Pi,
and every answer's evidence says it is simulated."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from daemon_harness import start_daemon, stop_daemon, wait_ready, write_mock
from mosquitto import free_port
from serve_command import edge_agent_command

from edge_agentd.agent.registry import Registry, SkillSpec
from edge_agentd.skills import register_builtins
from edge_agentd.skills.demo import DEMO_NOTE, DEMO_PROBE, write_demo_device

SENSOR_SKILLS = ("cpu_temperature", "list_sensors", "read_sensor", "compare_sensors")


def _registry(sysfs: Path, *, demo: bool) -> Registry:
    registry = Registry()
    register_builtins(registry, sysfs_root=sysfs, demo=demo)
    return registry


def _spec(registry: Registry, name: str) -> SkillSpec:
    spec = registry.get(name)
    assert spec is not None, name
    return spec


def test_every_sensor_result_of_the_demo_device_says_it_is_simulated(tmp_path: Path) -> None:
    tree = write_demo_device(tmp_path / "sys")
    registry = _registry(tree, demo=True)
    results = {
        "cpu_temperature": registry.call(_spec(registry, "cpu_temperature"), {}),
        "list_sensors": registry.call(_spec(registry, "list_sensors"), {}),
        "read_sensor": registry.call(_spec(registry, "read_sensor"), {"name": "bme280"}),
        "compare_sensors": registry.call(
            _spec(registry, "compare_sensors"), {"first": "thermal_zone0", "second": DEMO_PROBE}
        ),
    }
    assert set(results) == set(SENSOR_SKILLS)
    for name, result in results.items():
        assert result["demo"] == DEMO_NOTE, name
    assert results["cpu_temperature"]["value"] == 48.312
    assert results["list_sensors"]["count"] == 3
    # The clock and the system are this machine's own: no demo mark there.
    for name in ("now", "system_status"):
        assert "demo" not in registry.call(_spec(registry, name), {}), name


def test_the_same_tree_read_as_a_real_one_carries_no_mark(tmp_path: Path) -> None:
    tree = write_demo_device(tmp_path / "sys")
    registry = _registry(tree, demo=False)
    result = registry.call(_spec(registry, "cpu_temperature"), {})
    assert "demo" not in result and result["value"] == 48.312


def _ask(endpoint: str, question: str) -> dict[str, Any]:
    done = subprocess.run(
        edge_agent_command("ask", question, "--json", "--endpoint", endpoint, "--timeout", "30"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


def test_serve_demo_reads_the_simulated_pi_and_removes_it_when_stopped(tmp_path: Path) -> None:
    mock = write_mock(
        tmp_path / "mock.json",
        [json.dumps({"skill_name": "cpu_temperature"}), json.dumps({"final_answer": "48.312"})],
    )
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    process = start_daemon(
        ["--model", f"mock:{mock}", "--demo", "--log-level", "WARNING", "--endpoint", endpoint]
    )
    try:
        wait_ready(endpoint, process)
        reply = _ask(endpoint, "How hot is the CPU?")
    finally:
        output = stop_daemon(process)
    (result,) = [e for e in reply["events"] if e["type"] == "SkillResultObservation"]
    assert result["result"]["demo"] == DEMO_NOTE
    assert result["result"]["value"] == 48.312
    # The start says where the simulated tree is, and that it is not this machine's.
    where = re.search(r"simulated Raspberry Pi under (\S+), not this machine's", output)
    assert where is not None, output
    assert not Path(where.group(1)).exists(), "the demo tree outlived the daemon"
