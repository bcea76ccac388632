"""The built-in skills through the Agent: a hung skill, an empty device, and a full sensor run."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edge_agentd import (
    Agent,
    CallSkillAction,
    FinalAnswerAction,
    MockModel,
    SkillResultObservation,
    ToolErrorObservation,
)
from edge_agentd.agent.registry import Registry, SkillOptions
from edge_agentd.skills import BUILTIN_NAMES, register_builtins
from edge_agentd.skills.demo import SysfsTree, w1_slave_text
from edge_agentd.skills.sysfs import SYSFS_ROOT_ENV


def call(skill: str, **arguments: Any) -> str:
    return json.dumps({"skill_name": skill, "arguments": arguments})


def answer(text: str) -> str:
    return json.dumps({"final_answer": text})


def bme280_tree(root: Path) -> SysfsTree:
    fake = SysfsTree(root)
    fake.thermal_zone(0, "cpu-thermal", "51540")
    fake.iio_device(
        0,
        "bme280",
        {
            "in_temp_input": "21370",
            "in_pressure_input": "101.325",
            "in_humidityrelative_input": "45123",
        },
    )
    fake.w1_probe("28-0316a2796eff", w1_slave_text(4500))
    return fake


@pytest.fixture
def registry() -> Iterator[Registry]:
    registry = Registry()
    yield registry


def test_sensor_run_over_a_tree_named_by_the_environment(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = bme280_tree(tmp_path / "sys")
    monkeypatch.setenv(SYSFS_ROOT_ENV, str(fake.root))
    register_builtins(registry)
    model = MockModel(
        [
            call("cpu_temperature"),
            call("list_sensors"),
            call("read_sensor", name="bme280"),
            call("read_sensor", name="28-0316a2796eff"),
            answer("CPU 51.54 °C; room 21.37 °C, 1013.25 hPa, 45.123 %RH; outside 4.5 °C."),
        ]
    )
    state = Agent(model, registry).run("How warm is everything?")
    assert state.outcome == "answered"
    results = [e.result for e in state.stream.root if isinstance(e, SkillResultObservation)]
    assert results[0] == {
        "sensor": "thermal_zone0",
        "label": "cpu-thermal",
        "quantity": "temperature",
        "value": 51.54,
        "unit": "°C",
        "also": {"value": 124.77, "unit": "°F", "unit_name": "Fahrenheit"},
    }
    assert [s["name"] for s in results[1]["sensors"]] == [
        "thermal_zone0",
        "bme280",
        "28-0316a2796eff",
    ]
    assert results[2]["readings"] == [
        {"quantity": "humidity", "value": 45.123, "unit": "%RH", "channel": "in_humidityrelative"},
        {"quantity": "pressure", "value": 1013.25, "unit": "hPa", "channel": "in_pressure"},
        {
            "quantity": "temperature",
            "value": 21.37,
            "unit": "°C",
            "also": {"value": 70.47, "unit": "°F", "unit_name": "Fahrenheit"},
            "channel": "in_temp",
        },
    ]
    assert results[3]["readings"] == [
        {
            "quantity": "temperature",
            "value": 4.5,
            "unit": "°C",
            "also": {"value": 40.1, "unit": "°F", "unit_name": "Fahrenheit"},
        }
    ]
    # The model saw each result in its next prompt, units included.
    assert "1013.25" in model.prompts[3] and "hPa" in model.prompts[3]
    assert "28-0316a2796eff" in model.prompts[2]


def test_an_empty_device_says_so_to_the_model(registry: Registry, tmp_path: Path) -> None:
    register_builtins(registry, sysfs_root=tmp_path / "empty")
    model = MockModel(
        [
            call("cpu_temperature"),
            call("read_sensor", name="../../etc/shadow"),
            call("list_sensors"),
            answer("I cannot tell: this device has no sensors."),
        ]
    )
    state = Agent(model, registry).run("How hot is the CPU?")
    cpu_error, name_error = (e for e in state.stream.root if isinstance(e, ToolErrorObservation))
    assert cpu_error.error == (
        f"SensorError: no thermal zone was found under {tmp_path}/empty/class/thermal, so this "
        "device reports no CPU temperature"
    )
    assert name_error.error == (
        "SensorError: no sensor named '../../etc/shadow': no sensors were found on this device"
    )
    assert cpu_error.available_skills == list(BUILTIN_NAMES[:-1])
    listed = state.stream.root[-2]
    assert isinstance(listed, SkillResultObservation)
    assert listed.result["sensors"] == []
    assert "no sensors were found" in listed.result["note"]
    assert state.final_answer == "I cannot tell: this device has no sensors."


def test_a_hung_skill_times_out_and_the_run_carries_on(registry: Registry, tmp_path: Path) -> None:
    release = threading.Event()
    calls: list[str] = []

    def stuck_sensor() -> dict[str, Any]:
        """A sensor whose bus locks up."""
        calls.append("stuck")
        release.wait(30)
        return {"value": 1.0, "unit": "°C"}

    register_builtins(registry, sysfs_root=bme280_tree(tmp_path / "sys").root)
    registry.add(stuck_sensor, SkillOptions(timeout=0.3))
    model = MockModel(
        [
            call("stuck_sensor"),
            call("cpu_temperature"),
            call("stuck_sensor"),
            answer("The CPU is at 51.54 °C; the other sensor hangs."),
        ]
    )
    started = time.monotonic()
    try:
        state = Agent(model, registry).run("Read everything")
        elapsed = time.monotonic() - started
    finally:
        release.set()
    assert state.outcome == "answered"
    assert elapsed < 5
    events = state.stream.root
    assert [type(e).__name__ for e in events] == [
        "CallSkillAction",
        "ToolErrorObservation",
        "CallSkillAction",
        "SkillResultObservation",
        "CallSkillAction",
        "ToolErrorObservation",
        "FinalAnswerAction",
    ]
    timed_out, still_running = events[1], events[5]
    assert isinstance(timed_out, ToolErrorObservation)
    assert isinstance(still_running, ToolErrorObservation)
    assert "ran past its 0.3 s timeout" in timed_out.error
    assert "still running" in still_running.error
    assert "stuck_sensor" in timed_out.available_skills
    assert isinstance(events[3], SkillResultObservation) and events[3].result["value"] == 51.54
    assert calls == ["stuck"]  # never started twice while the first call was stuck

    # Once the stuck call has returned, the skill works again.
    deadline = time.monotonic() + 5
    state = None
    while time.monotonic() < deadline:
        state = Agent(MockModel([call("stuck_sensor"), answer("ok")]), registry).run("again")
        if isinstance(state.stream.root[1], SkillResultObservation):
            break
        time.sleep(0.02)
    assert state is not None
    assert state.stream.root[1] == SkillResultObservation(
        skill_name="stuck_sensor", result={"value": 1.0, "unit": "°C"}, call_id="call_1"
    )


def test_per_skill_timeouts_from_the_config(registry: Registry, tmp_path: Path) -> None:
    register_builtins(registry, sysfs_root=tmp_path, timeouts={"read_sensor": 4.5})
    timeouts = {spec.name: spec.timeout_s for spec in registry}
    assert timeouts["read_sensor"] == 4.5
    assert timeouts["cpu_temperature"] == 2.0
    assert {spec.source for spec in registry} == {"builtin"}
    with pytest.raises(ValueError, match="timeouts name no built-in skill: raed_sensor"):
        register_builtins(Registry(), timeouts={"raed_sensor": 1.0})


def test_builtins_register_all_or_nothing(registry: Registry, tmp_path: Path) -> None:
    @registry.skill
    def now() -> str:
        """Someone else's clock."""
        return "noon"

    with pytest.raises(ValueError, match="skill 'now'"):
        register_builtins(registry, sysfs_root=tmp_path)
    assert registry.names() == ["now"]


def test_an_oversized_result_is_cut_with_a_marker(registry: Registry, sysfs: SysfsTree) -> None:
    for n in range(40):
        sysfs.iio_device(n, f"bme280_at_0x{n:02x}", {"in_temp_input": "20000"})
    register_builtins(registry, sysfs_root=sysfs.root)
    state = Agent(
        MockModel([call("list_sensors"), answer("many")]), registry, max_result_chars=500
    ).run("list")
    observation = state.stream.root[1]
    assert isinstance(observation, SkillResultObservation)
    assert observation.truncated
    assert isinstance(observation.result, str) and "[truncated" in observation.result
    assert isinstance(state.stream.root[0], CallSkillAction)
    assert isinstance(state.stream.root[-1], FinalAnswerAction)
