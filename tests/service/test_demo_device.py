"""``edge-agent serve --demo``: a newcomer's machine without sensors answers from a simulated Pi,
and every answer's evidence says it is simulated."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from daemon_harness import start_daemon, stop_daemon, wait_ready, write_mock

from edge_agentd.agent.registry import Registry, SkillSpec
from edge_agentd.skills import register_builtins
from edge_agentd.skills.demo import DEMO_NOTE, DEMO_PROBE, write_demo_device
from scripts.testbed.processes import free_port
from scripts.testbed.serve_command import edge_agent_command

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


def _serve_demo(tmp_path: Path, replies: list[str], *more: str) -> tuple[Any, str]:
    mock = write_mock(tmp_path / f"mock-{len(list(tmp_path.iterdir()))}.json", list(replies))
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    process = start_daemon(
        ["--model", f"mock:{mock}", *more, "--log-level", "WARNING", "--endpoint", endpoint]
    )
    wait_ready(endpoint, process)
    return process, endpoint


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        edge_agent_command(*args), capture_output=True, text=True, timeout=60, check=False
    )


def test_an_answer_drawn_from_the_demo_device_says_so_in_its_text(tmp_path: Path) -> None:
    cpu = [json.dumps({"skill_name": "cpu_temperature"}), json.dumps({"final_answer": "The CPU is 48.312 °C."})]
    process, endpoint = _serve_demo(tmp_path, cpu, "--demo")
    try:
        plain = _run("ask", "How hot is the CPU?", "--endpoint", endpoint)
        streamed = _run("ask", "How hot is the CPU?", "--stream", "--endpoint", endpoint)
        listed = _run("runs", "--json", "--endpoint", endpoint)
    finally:
        stop_daemon(process)
    # What a person reads says it: the printed answer.
    assert (plain.returncode, plain.stdout) == (0, "The CPU is 48.312 °C. (demo device)\n")
    # The event and the reply say the same answer; raw keeps what the model wrote.
    lines = [json.loads(line) for line in streamed.stdout.splitlines()]
    final_event, result = lines[-2], lines[-1]
    assert final_event["type"] == "FinalAnswerAction"
    assert final_event["answer"] == result["answer"] == "The CPU is 48.312 °C. (demo device)"
    assert result["events"][-1] == final_event
    assert json.loads(final_event["raw"])["final_answer"] == "The CPU is 48.312 °C."
    # And the journal keeps the answer as it was given.
    assert {run["answer"] for run in json.loads(listed.stdout)} == {
        "The CPU is 48.312 °C. (demo device)"
    }


def test_an_answer_no_demo_result_went_into_is_the_machines_own(tmp_path: Path) -> None:
    clock = [json.dumps({"skill_name": "now"}), json.dumps({"final_answer": "It is noon."})]
    process, endpoint = _serve_demo(tmp_path, clock, "--demo")
    try:
        asked = _run("ask", "What time is it?", "--endpoint", endpoint)
    finally:
        stop_daemon(process)
    assert (asked.returncode, asked.stdout) == (0, "It is noon.\n")


def test_the_demo_keeps_its_own_journal_and_keys(tmp_path: Path) -> None:
    # `make run` and `make demo` serve the same endpoint one after the other: a key asked of one
    # never returns the other's answer, and neither lists the other's runs.
    said = {"machine": "I cannot tell: no result says the CPU.", "demo": "The CPU is 48.312 °C."}
    script = {
        name: [json.dumps({"skill_name": "cpu_temperature"}), json.dumps({"final_answer": text})]
        for name, text in said.items()
    }
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    key = ["ask", "How hot is the CPU?", "--key", "cpu-07:00", "--endpoint", endpoint]
    answers: dict[str, list[str]] = {}
    listed: dict[str, list[str]] = {}
    for name, demo in (("machine", []), ("demo", ["--demo"]), ("machine", [])):
        mock = write_mock(tmp_path / f"{name}.json", script[name])
        sysfs = tmp_path / "no-sensors"
        sysfs.mkdir(exist_ok=True)
        process = start_daemon(
            ["--model", f"mock:{mock}", *demo, "--endpoint", endpoint],
            env={"EDGE_AGENT_SYSFS_ROOT": str(sysfs)},
        )
        try:
            wait_ready(endpoint, process)
            answers.setdefault(name, []).append(_run(*key).stdout.strip())
            listed[name] = [run["answer"] for run in json.loads(_run("runs", "--json", "--endpoint", endpoint).stdout)]
        finally:
            stop_daemon(process)
    assert answers == {
        "machine": [said["machine"], said["machine"]],
        "demo": [f"{said['demo']} (demo device)"],
    }
    assert listed == {"machine": [said["machine"]], "demo": [f"{said['demo']} (demo device)"]}
