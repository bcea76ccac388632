"""docs/design.md, "Where to start reading": the loop is one unit. The Agent's run, loop, step and
dispatch are one module's; what they use is beside them and never calls back; the loop always has
a guide; and what a run keeps for its subsystems is the run's, not its serialized state's."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

from edge_agentd import (
    STATE_ADAPTER,
    Agent,
    AgentState,
    CallSkillAction,
    Grounding,
    MockModel,
    Registry,
)
from edge_agentd.agent import loop
from edge_agentd.agent.guide import PLAIN, PlainGuide
from edge_agentd.agent.observed import Gathered
from edge_agentd.agent.run import RunCache, RunOptions

AGENT_DIR = Path(loop.__file__).parent
BESIDE = ("run", "prompter", "validators", "replies", "supervision", "guide", "grounding")


def home() -> Registry:
    registry = Registry()

    @registry.skill()
    def humidity() -> dict[str, object]:
        """The relative humidity in the living room."""
        return {"value": 41.5, "unit": "%RH"}

    return registry


def test_the_agent_class_stays_under_200_lines() -> None:
    lines, _ = inspect.getsourcelines(Agent)
    assert len(lines) < 200


def test_the_agent_reads_top_to_bottom_in_its_module() -> None:
    own = {name for name, value in vars(Agent).items() if inspect.isfunction(value)}
    assert {"run", "start", "loop", "step", "dispatch"} <= own
    assert inspect.getmodule(Agent) is loop


def test_nothing_beside_the_loop_imports_it_back() -> None:
    # No module the Agent uses imports the Agent's module, not even for its types.
    for name in BESIDE:
        tree = ast.parse((AGENT_DIR / f"{name}.py").read_text(encoding="utf-8"))
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module is not None
        }
        assert "edge_agentd.agent.loop" not in imported, name


def test_an_agent_given_no_guide_asks_the_plain_one() -> None:
    model = MockModel([json.dumps({"final_answer": "Hello."})])
    agent = Agent(model, home())
    assert agent.guide is PLAIN
    guided = Agent(MockModel([]), home(), guidance=PlainGuide())
    state = AgentState(query="Hello?")
    assert agent.render_prompt(state) == guided.render_prompt(state)
    assert agent.run("Hello?").final_answer == "Hello."


def test_what_a_run_keeps_for_grounding_is_the_runs_not_its_states() -> None:
    replies = [
        json.dumps({"skill_name": "humidity", "arguments": {}}),
        json.dumps({"final_answer": "It is 41.5 %RH."}),
    ]
    agent = Agent(MockModel(replies), home(), grounding=Grounding())
    ticket = agent.start(RunOptions.of("What is the humidity?"))
    state = ticket.result()
    assert state.outcome == "answered"
    cache = ticket.record.cache
    assert isinstance(cache, RunCache) and isinstance(cache.evidence, Gathered)
    # Grounding read every event up to the answer it checked, the prompt every event before the
    # last step, and the run kept what each read.
    assert cache.evidence.seen == len(state.stream) == 3
    assert cache.rendered == 2 and cache.calls == 1
    # The state stays the seed's query and stream, on the wire as before.
    assert set(AgentState.model_fields) == {"query", "stream"}
    assert not hasattr(state, "context")
    wire = STATE_ADAPTER.dump_python(state, mode="json")
    assert set(wire) == {"query", "events"}
    assert STATE_ADAPTER.validate_python(wire) == state


def test_a_step_outside_a_run_starts_from_an_empty_cache() -> None:
    reply = json.dumps({"skill_name": "humidity", "arguments": {}})
    agent = Agent(MockModel([reply, reply]), home(), grounding=Grounding())
    state = AgentState(query="What is the humidity?")
    first, second = agent.step(state), agent.step(state)
    # Each is the run's first call: a step outside a run counts the stream it is given.
    assert isinstance(first, CallSkillAction) and isinstance(second, CallSkillAction)
    assert first.call_id == second.call_id == "call_1"
    assert len(state.stream) == 0
