"""A skill the model called twice the same way is not offered a third time, where we decode."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from edge_agentd.agent.events import (
    AgentState,
    CallSkillAction,
    SkillResultObservation,
    ToolErrorObservation,
)
from edge_agentd.agent.grounding import Grounding, repeated_calls
from edge_agentd.agent.registry import Registry


def _registry() -> Registry:
    registry = Registry()

    @registry.skill
    def compare(first: str, second: str) -> dict[str, Any]:
        """Compare two sensors' readings."""
        return {"first": first, "second": second}

    @registry.skill
    def cpu_temperature() -> dict[str, Any]:
        """The CPU's temperature."""
        return {"value": 48.3, "unit": "°C"}

    return registry


def _failed(state: AgentState, n: int, **arguments: str) -> None:
    call_id = f"call_{n}"
    state.stream.append(CallSkillAction(skill_name="compare", arguments=arguments, call_id=call_id))
    state.stream.append(
        ToolErrorObservation(
            skill_name="compare",
            error="SensorError: compare two different sensors",
            available_skills=["compare", "cpu_temperature"],
            call_id=call_id,
        )
    )


def _offered(schema: dict[str, Any]) -> set[str]:
    return {
        b["properties"]["skill_name"]["const"]
        for b in schema["oneOf"]
        if "skill_name" in b.get("properties", {})
    }


def test_a_call_made_once_stays_open_and_twice_is_left_out() -> None:
    registry = _registry()
    grounding = Grounding()
    state = AgentState(query="Is the CPU warmer than 40 °C?")
    names = list(registry.names())
    schema = registry.action_schema(None, ())
    _failed(state, 1, first="cpu", second="cpu")
    held = grounding.hold(schema, state, registry, names)
    assert _offered(held) == {"compare", "cpu_temperature"}
    _failed(state, 2, first="cpu", second="cpu")
    held = grounding.hold(schema, state, registry, names)
    # The CPU's own skill, not called yet, names what is asked: the model is to call it.
    assert _offered(held) == {"cpu_temperature"}


def test_other_arguments_are_another_call() -> None:
    state = AgentState(query="q")
    _failed(state, 1, first="cpu", second="cpu")
    _failed(state, 2, first="cpu", second="bme280")
    assert repeated_calls(state) == frozenset()


def test_a_repeated_call_that_answered_counts_too() -> None:
    state = AgentState(query="q")
    for n in (1, 2):
        state.stream.append(
            CallSkillAction(skill_name="cpu_temperature", arguments={}, call_id=f"call_{n}")
        )
        state.stream.append(
            SkillResultObservation(
                skill_name="cpu_temperature", result={"value": 48.3}, call_id=f"call_{n}"
            )
        )
    assert repeated_calls(state) == frozenset({"cpu_temperature"})


def test_a_schema_of_calls_alone_is_never_emptied() -> None:
    registry = _registry()
    state = AgentState(query="q")
    for n in (1, 2):
        state.stream.append(
            CallSkillAction(skill_name="cpu_temperature", arguments={}, call_id=f"call_{n}")
        )
    calls_only = {
        "oneOf": [
            b
            for b in registry.action_schema(None, ())["oneOf"]
            if b["properties"].get("skill_name", {}).get("const") == "cpu_temperature"
        ]
    }
    held = Grounding().hold(calls_only, state, registry, list(registry.names()))
    assert _offered(held) == {"cpu_temperature"}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.dictionaries(st.text(max_size=3), st.one_of(st.integers(), st.text(max_size=3))),
        ),
        max_size=8,
    )
)
def test_repeated_is_exactly_the_skills_of_a_call_seen_twice(
    calls: list[tuple[str, dict[str, Any]]],
) -> None:
    state = AgentState(query="q")
    for n, (name, arguments) in enumerate(calls):
        state.stream.append(CallSkillAction(skill_name=name, arguments=arguments, call_id=f"c{n}"))
    expected = {
        name
        for i, (name, arguments) in enumerate(calls)
        if any(name == other and arguments == args for other, args in calls[:i])
    }
    assert repeated_calls(state) == expected
