"""The embedded Gemma 3 270M, guided, answers a simple sensor question with the sensor's value.

The real model, the real built-in skills over a fake sysfs, and no deadline: a loaded machine
makes this slow, never wrong. How often it is right across many questions is a benchmark's job
(scripts/bench/bench_competence.py), not a test's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from edge_agentd import Agent, Registry, load_model
from edge_agentd.agent.grounding import Grounding
from edge_agentd.guidance.guidance import Guidance
from edge_agentd.model.llama import LlamaModel
from edge_agentd.skills import register_builtins
from edge_agentd.skills.demo import SysfsTree


@pytest.fixture(scope="module")
def model() -> LlamaModel:
    return load_model(n_ctx=2048)


def numbers(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)?", text)]


def test_a_cpu_temperature_question_is_answered_with_the_sensors_value(
    model: LlamaModel, tmp_path: Path
) -> None:
    SysfsTree(tmp_path / "sys").thermal_zone(0, "cpu-thermal", "51234")
    registry = Registry()
    register_builtins(registry, sysfs_root=tmp_path / "sys")
    agent = Agent(model, registry, guidance=Guidance(), grounding=Grounding())
    state = agent.run("What is the CPU temperature?", max_iterations=4)
    called = [e.skill_name for e in state.stream.root if e.type == "CallSkillAction"]
    assert called == ["cpu_temperature"]
    assert state.outcome == "answered", state.stream.root[-1]
    assert state.final_answer is not None
    # The value is the model's to write; 51.234 °C may be rounded, but to this value.
    assert any(abs(n - 51.234) < 0.51 for n in numbers(state.final_answer)), state.final_answer
