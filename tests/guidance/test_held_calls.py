"""After a call whose result says nothing of what was asked, a model that drives the loop is held
to the very calls a called skill lists that could say it, by their arguments: never the one it
made again (daemon/guidance/answering.py's ``calls_with``; a driving model repeated
``read_sensor(name="thermal_zone0")`` for "the 1-Wire probe"). test_unmade_calls.py holds which
skills may be called.

The skills are made up; the model is scripted where the test reads what it was asked, and the
tiny random-weight Qwen2 where llama.cpp must decode under the held grammar.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from tiny_gguf import build_qwen2_gguf

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.actions import HERMES
from edge_agentd.agent.events import CallSkillAction, FinalAnswerAction
from edge_agentd.agent.grounding import Grounding
from edge_agentd.guidance.answering import Answering
from edge_agentd.model.loading import load_model
from edge_agentd.model.toolgrammar import tagged_gbnf

WATERS = {"t-01": ("the pond", 18.5), "t-02": ("the aquarium", 24.0), "t-03": ("the tank", 21.0)}


def water() -> Registry:
    registry = Registry()

    def calls() -> list[tuple[dict[str, Any], str]]:
        return [({"id": i}, f"the water temperature of {name}") for i, (name, _) in WATERS.items()]

    @registry.skill(calls=calls, timeout=1.0)
    def water_temperature(id: str) -> dict[str, Any]:
        """The water temperature one thermometer reads."""
        return {"thermometer": id, "value": WATERS[id][1], "unit": "°C"}

    return registry


def _call(thermometer: str) -> str:
    return json.dumps({"skill_name": "water_temperature", "arguments": {"id": thermometer}})


def test_the_next_call_is_held_to_the_listed_calls_that_name_what_was_asked() -> None:
    model = MockModel([_call("t-01"), _call("t-02")], uses_action_schema=True)
    agent = Agent(model, water(), guidance=Answering(), grounding=Grounding())
    state = agent.run("How warm is the aquarium?", max_iterations=4)
    # After the pond's reading, the one call left that names the aquarium; not the pond's again.
    held = model.calls[1]["action_schema"]
    [branch] = held["oneOf"]
    assert branch["properties"]["arguments"] == {"enum": [{"id": "t-02"}]}
    final = [e for e in state.stream if isinstance(e, FinalAnswerAction)]
    assert state.outcome == "answered" and final and final[-1].made_by == "engine"
    assert state.final_answer is not None and "24.0" in state.final_answer
    assert "call-root" in tagged_gbnf(HERMES, held)


@pytest.fixture(scope="module")
def qwen2_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_qwen2_gguf(tmp_path_factory.mktemp("qwen2") / "tiny-qwen2.gguf")


def test_llama_cpp_decodes_under_the_held_calls(qwen2_gguf: Path) -> None:
    """Random weights: whatever the first call, a call after one whose result does not name
    the aquarium is the aquarium's listed call, and none is made twice."""
    model = load_model(qwen2_gguf, n_ctx=2048, max_tokens=80, tool_calls=True)
    try:
        agent = Agent(model, water(), guidance=Answering(), grounding=Grounding())
        state = agent.run("How warm is the aquarium?", max_iterations=4)
    finally:
        model.close()
    calls = [e.arguments for e in state.stream if isinstance(e, CallSkillAction)]
    assert calls, list(state.stream)
    for made, after in itertools.pairwise(calls):
        if made != {"id": "t-02"}:
            assert after == {"id": "t-02"}, calls
    assert len({json.dumps(c, sort_keys=True) for c in calls}) == len(calls), calls
