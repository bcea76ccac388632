"""The skills through a real daemon process: ``edge-agent serve --model mock:FILE`` over ZeroMQ.

The daemon finds its sensors in a fake sysfs tree named by ``EDGE_AGENT_SYSFS_ROOT`` in its
environment, loads a plugin directory holding one good and one broken plugin, and is asked through
the real client and the real ``edge-agent skills`` command.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import call, edge_agent_command

from edge_agentd.client.zmqclient import Client
from edge_agentd.skills.demo import SysfsTree, w1_slave_text

DaemonProcess = Callable[..., AbstractContextManager[str]]  # conftest.py

GARDEN = '''
def register(registry):
    @registry.skill
    def soil_moisture(bed: str) -> dict:
        """Soil moisture of a garden bed, in percent."""
        return {"bed": bed, "value": 41.5, "unit": "%"}
'''


@pytest.fixture
def daemon(
    tmp_path: Path, sysfs: SysfsTree, daemon_process: DaemonProcess
) -> Iterator[tuple[str, Path]]:
    sysfs.thermal_zone(0, "cpu-thermal", "51540")
    sysfs.iio_device(
        0,
        "bme280",
        {"in_temp_raw": "2137", "in_temp_scale": "10", "in_pressure_input": "101.325"},
    )
    sysfs.w1_probe("28-0316a2796eff", w1_slave_text(-2500))
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "garden.py").write_text(GARDEN)
    (plugins / "broken.py").write_text("import no_such_module_for_edge_agentd\n")
    config = tmp_path / "edge-agent.toml"
    config.write_text(
        f"[skills]\ndirectories = [{json.dumps(str(plugins))}]\nentry_points = false\n"
    )
    replies = [
        call("cpu_temperature"),
        call("list_sensors"),
        call("read_sensor", name="bme280"),
        call("read_sensor", name="28-0316a2796eff"),
        call("read_sensor", name="/etc/passwd"),
        call("soil_moisture", bed="herbs"),
        json.dumps({"final_answer": "CPU 51.54 °C, room 21.37 °C, outside -2.5 °C."}),
    ]
    mock = tmp_path / "mock.json"
    mock.write_text(json.dumps(replies))
    endpoint = f"ipc://{tmp_path}/agent.sock"
    args = ["--model", f"mock:{mock}", "--config", str(config)]
    with daemon_process(args, endpoint, env={"EDGE_AGENT_SYSFS_ROOT": str(sysfs.root)}):
        yield endpoint, plugins


def results(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in reply["state"]["events"] if e["type"].endswith("Observation")]


def test_sensor_run_through_the_daemon(daemon: tuple[str, Path]) -> None:
    endpoint, plugins = daemon
    with Client(endpoint, timeout=20) as client:
        reply = client.run("How warm is it everywhere?")
        status = client.status()
    assert reply["outcome"] == "answered"
    cpu, listed, bme, probe, hostile, soil = results(reply)
    assert cpu["result"] == {
        "sensor": "thermal_zone0",
        "label": "cpu-thermal",
        "quantity": "temperature",
        "value": 51.54,
        "unit": "°C",
        "also": {"value": 124.77, "unit": "°F", "unit_name": "Fahrenheit"},
    }
    assert [s["name"] for s in listed["result"]["sensors"]] == [
        "thermal_zone0",
        "bme280",
        "28-0316a2796eff",
    ]
    assert bme["result"]["readings"] == [
        {"quantity": "pressure", "value": 1013.25, "unit": "hPa", "channel": "in_pressure"},
        {
            "quantity": "temperature",
            "value": 21.37,
            "unit": "°C",
            "also": {"value": 70.47, "unit": "°F", "unit_name": "Fahrenheit"},
            "channel": "in_temp",
        },
    ]
    assert probe["result"]["readings"] == [
        {
            "quantity": "temperature",
            "value": -2.5,
            "unit": "°C",
            "also": {"value": 27.5, "unit": "°F", "unit_name": "Fahrenheit"},
        }
    ]
    # A name no sensor has is none of read_sensor's choices: refused before the skill runs,
    # with the names it may take (the skill's own refusal is tests/skills/test_skills_sensors.py's).
    assert hostile["type"] == "ValidationErrorObservation"
    assert hostile["validator_name"] == "skill_arguments"
    assert hostile["feedback"] == (
        'read_sensor: name must be one of "thermal_zone0", "bme280", "28-0316a2796eff"; '
        '"/etc/passwd" is none of them'
    )
    assert soil["result"] == {"bed": "herbs", "value": 41.5, "unit": "%"}
    assert status["skill_problems"] == [
        {
            "source": str(plugins / "broken.py"),
            "error": "ModuleNotFoundError: No module named 'no_such_module_for_edge_agentd'",
        }
    ]


def test_edge_agent_skills_lists_schemas_and_sources(daemon: tuple[str, Path]) -> None:
    endpoint, plugins = daemon
    listed = subprocess.run(
        edge_agent_command("skills", "--json", "--endpoint", endpoint),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    skills = {entry["name"]: entry for entry in json.loads(listed.stdout)}
    builtins = [
        "cpu_temperature",
        "list_sensors",
        "read_sensor",
        "compare_sensors",
        "system_status",
        "now",
        "resolve_date",
    ]
    assert list(skills) == [*builtins, "soil_moisture"]
    assert skills["read_sensor"]["source"] == "builtin"
    assert skills["read_sensor"]["parameters"]["required"] == ["name"]
    assert skills["soil_moisture"]["source"] == str(plugins / "garden.py")
    assert skills["soil_moisture"]["parameters"]["properties"] == {"bed": {"type": "string"}}
