"""The agent loop's own cost per iteration, side by side with smolagents' ToolCallingAgent.

Both frameworks do the same scripted work: 20 registered skills (tools), one of them called 11
times, then a final answer, so 12 iterations. The scripted model costs next to nothing, so the
time measured is the framework's: building the prompt or messages, parsing, validating arguments,
dispatching, recording. Run with `.venv/bin/python -m scripts.bench.bench_overhead` after
`pip install -e '.[bench]'`.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from edge_agentd import Agent, Grounding, MockModel, Registry, SkillOptions

N_SKILLS = 20
N_CALLS = 11
ITERATIONS = N_CALLS + 1
BUDGET_RATIO = 0.05


def skill_names() -> list[str]:
    return [f"sensor_{i:02d}" for i in range(N_SKILLS)]


def read(name: str, room: str) -> str:
    return f"{name} in {room}: 21.5 °C"


# -- edge-agent ------------------------------------------------------------------------------


def edge_agent_runner(timeout: float | None = 2.0, with_schema: bool = False) -> Callable[[], Any]:
    """Skills run under the default 2 s timeout (a worker-thread hand-off per call), or inline
    with ``timeout=None`` as smolagents runs its tools."""
    registry = Registry()

    def sensor(name: str) -> Callable[..., str]:
        def reading(room: str, precise: bool = False) -> str:
            return read(name, room)

        return reading

    for name in skill_names():
        registry.add(
            sensor(name),
            SkillOptions(
                name=name,
                description=f"Read the temperature of {name} in a room, in degrees Celsius.",
                timeout=timeout,
            ),
        )
    replies = [
        json.dumps({"skill_name": "sensor_07", "arguments": {"room": f"room {i}"}})
        for i in range(N_CALLS)
    ] + [json.dumps({"final_answer": "It is 21.5 °C everywhere."})]

    def run_once() -> Any:
        # The package's scripted model: it decodes under no schema, so the loop builds none,
        # as smolagents builds no grammar (the grounded schema's cost is measured apart, with
        # ``uses_action_schema=True``: a model that decodes under it).
        model = MockModel(replies, uses_action_schema=with_schema)
        # Grounding on, as the daemon runs every answer.
        state = Agent(model, registry, grounding=Grounding()).run(
            "How warm is it?", max_iterations=ITERATIONS
        )
        if state.outcome != "answered" or len(state.stream) != 2 * N_CALLS + 1:
            raise RuntimeError(f"edge-agent did not do the scripted work: {state.outcome}")
        return state

    return run_once


# -- smolagents ------------------------------------------------------------------------------


def smolagents_runner() -> Callable[[], Any]:
    from smolagents import LogLevel, Tool, ToolCallingAgent
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )

    tools = []
    for name in skill_names():

        def forward(self: Any, room: str, precise: bool = False) -> str:
            return read(self.name, room)

        cls = type(
            f"Tool_{name}",
            (Tool,),
            {
                "name": name,
                "description": f"Read the temperature of {name} in a room, in degrees Celsius.",
                "inputs": {
                    "room": {"type": "string", "description": "The room."},
                    "precise": {
                        "type": "boolean",
                        "description": "More decimals.",
                        "nullable": True,
                    },
                },
                "output_type": "string",
                "forward": forward,
            },
        )
        tools.append(cls())

    def call(index: int, name: str, arguments: dict[str, Any]) -> ChatMessage:
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=[
                ChatMessageToolCall(
                    id=f"call_{index}",
                    type="function",
                    function=ChatMessageToolCallFunction(name=name, arguments=arguments),
                )
            ],
        )

    class Scripted(Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(model_id="scripted")
            self.index = 0

        def generate(self, messages: Any, **kwargs: Any) -> ChatMessage:
            index = self.index
            self.index += 1
            if index < N_CALLS:
                return call(index, "sensor_07", {"room": f"room {index}"})
            return call(index, "final_answer", {"answer": "It is 21.5 °C everywhere."})

    def run_once() -> Any:
        agent = ToolCallingAgent(
            tools=tools, model=Scripted(), max_steps=ITERATIONS, verbosity_level=LogLevel.OFF
        )
        answer = agent.run("How warm is it?")
        if answer != "It is 21.5 °C everywhere." or len(agent.memory.steps) != ITERATIONS + 1:
            raise RuntimeError(f"smolagents did not do the scripted work: {answer!r}")
        return answer

    return run_once


# -- measuring -------------------------------------------------------------------------------


def per_iteration_us(run_once: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Median and best microseconds per iteration over ``repeats`` whole runs."""
    for _ in range(3):
        run_once()
    samples = []
    gc.collect()
    for _ in range(repeats):
        started = time.perf_counter()
        run_once()
        samples.append((time.perf_counter() - started) / ITERATIONS * 1e6)
    return statistics.median(samples), min(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    try:
        theirs = smolagents_runner()
    except ImportError:
        print("smolagents is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    # Interleave the measurements so that load on the machine hits both sides alike.
    ours: list[tuple[float, float]] = []
    inline: list[tuple[float, float]] = []
    schema: list[tuple[float, float]] = []
    smol: list[tuple[float, float]] = []
    ours_run, inline_run = edge_agent_runner(), edge_agent_runner(timeout=None)
    schema_run = edge_agent_runner(with_schema=True)
    for _ in range(3):
        ours.append(per_iteration_us(ours_run, args.repeats))
        inline.append(per_iteration_us(inline_run, args.repeats))
        schema.append(per_iteration_us(schema_run, args.repeats))
        smol.append(per_iteration_us(theirs, max(20, args.repeats // 4)))
    ours_median = statistics.median(m for m, _ in ours)
    inline_median = statistics.median(m for m, _ in inline)
    schema_median = statistics.median(m for m, _ in schema)
    theirs_median = statistics.median(m for m, _ in smol)
    ratio = ours_median / theirs_median
    print(f"work: {N_SKILLS} skills, {N_CALLS} calls of one skill, then a final answer")
    print(f"edge-agent, skills under 2 s timeout  : {ours_median:8.1f} us per iteration")
    print(f"edge-agent, skills inline (no timeout): {inline_median:8.1f} us per iteration")
    print(f"edge-agent, grounded schema built     : {schema_median:8.1f} us per iteration")
    print(f"smolagents ToolCallingAgent           : {theirs_median:8.1f} us per iteration")
    print(f"ratio (default, with timeouts): {ratio:.3f}  (budget <= {BUDGET_RATIO})")
    print(f"ratio (inline skills)         : {inline_median / theirs_median:.3f}")
    print(f"ratio (grounded schema built) : {schema_median / theirs_median:.3f}")
    print("within budget" if ratio <= BUDGET_RATIO else "OVER BUDGET")
    return 0 if ratio <= BUDGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
