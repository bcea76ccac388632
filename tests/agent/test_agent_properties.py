"""Properties that must hold for any model behaviour: append-only prompts, bounded runs, no escapes."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd import (
    EVENT_ADAPTER,
    STATE_ADAPTER,
    Agent,
    AgentState,
    MockModel,
    Registry,
    Soul,
    Workflow,
)
from edge_agentd.agent.registry import SkillOptions
from edge_agentd.model.formats import GEMMA3

STOP_REASONS = {"answered", "max_iterations", "retries_exhausted", "interrupted"}
# Two working skills and one that always raises, from conftest.py's registry factory.
SKILLS = ("cpu_temperature", "read_sensor", "fail")


@pytest.fixture(scope="module")
def shared(make_registry: Callable[..., Registry]) -> Registry:
    """One registry for the whole module: no test here changes it."""
    return make_registry(*SKILLS)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
actions = st.one_of(
    st.builds(
        lambda name, args: json.dumps({"skill_name": name, "arguments": args}),
        st.sampled_from(["cpu_temperature", "read_sensor", "fail", "nope", ""]),
        st.dictionaries(
            st.sampled_from(["name", "precise", "reason", "x"]), json_values, max_size=3
        ),
    ),
    st.builds(lambda a: json.dumps({"final_answer": a}), st.text(max_size=30)),
)
replies = st.one_of(st.text(max_size=80), json_values.map(json.dumps), actions)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(replies, max_size=14),
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=0, max_value=4),
)
def test_any_model_replies_end_in_a_defined_stop_reason(
    shared: Registry, scripted: list[str], max_iterations: int, max_retries: int
) -> None:
    model = MockModel(scripted)
    state = Agent(model, shared).run("q", max_iterations=max_iterations, max_retries=max_retries)
    assert isinstance(state, AgentState)
    assert state.outcome in STOP_REASONS
    assert len(model.prompts) <= max_iterations
    failures = [
        e for e in state.stream if e.type in {"ValidationErrorObservation", "ModelErrorObservation"}
    ]
    assert len(failures) <= max_retries + 1
    if state.outcome == "answered":
        assert state.final_answer is not None and state.final_answer.strip()
    # The whole state survives the wire format unchanged.
    assert STATE_ADAPTER.validate_json(STATE_ADAPTER.dump_json(state)) == state


@settings(max_examples=100, deadline=None)
@given(st.lists(replies, min_size=1, max_size=10))
def test_each_prompt_starts_with_the_previous_prompt_plus_the_raw_reply(
    shared: Registry, scripted: list[str]
) -> None:
    model = MockModel(scripted)
    Agent(model, shared).run("q", max_iterations=10, max_retries=10)
    for k in range(len(model.prompts) - 1):
        # A call past the script raised, so it had no reply: the prompt is re-sent as it was.
        reply = scripted[k] if k < len(scripted) else ""
        assert model.prompts[k + 1].startswith(model.prompts[k] + reply)


def test_the_prefix_property_holds_for_a_chat_format_with_turn_markers(shared: Registry) -> None:
    gemma = GEMMA3
    scripted = ["oops", '{"skill_name": "cpu_temperature"}', '{"final_answer": "48.5 degrees"}']

    class Formatted(MockModel):
        chat_format = gemma

    model = Formatted(scripted)
    Agent(model, shared).run("How hot?")
    assert model.prompts[0].startswith("<start_of_turn>user\nYour name is edge-agent.")
    assert model.prompts[0].endswith("\n\nHow hot?<end_of_turn>\n<start_of_turn>model\n")
    for k in range(len(model.prompts) - 1):
        assert model.prompts[k + 1].startswith(model.prompts[k] + scripted[k] + "<end_of_turn>\n")
    assert model.prompts[2].endswith(
        "<start_of_turn>user\nResult of cpu_temperature: 48.5<end_of_turn>\n<start_of_turn>model\n"
    )


def test_the_system_part_is_byte_identical_across_requests_and_agents(shared: Registry) -> None:
    soul = Soul(name="Hestia", persona="You keep the house.")
    workflow = Workflow(name="w", instructions="Be brief.", skills=["read_sensor"])
    first, second = MockModel(['{"final_answer": "a"}']), MockModel(['{"final_answer": "b"}'])
    Agent(first, shared, soul=soul).run(workflow, query="one question")
    agent = Agent(second, shared, soul=soul)
    agent.run(workflow, query="a different question")
    preamble = agent.preamble(workflow)
    assert first.prompts[0].startswith(preamble)
    assert second.prompts[0].startswith(preamble)
    assert preamble == Agent(MockModel([]), shared, soul=soul).preamble(workflow)
    assert "one question" not in preamble


def test_the_system_part_changes_when_the_registry_does(
    make_registry: Callable[..., Registry],
) -> None:
    reg = make_registry(*SKILLS)
    agent = Agent(MockModel([]), reg)
    before = agent.system_prompt()

    @reg.skill
    def uptime() -> float:
        """Seconds since boot."""
        return 1.0

    after = agent.system_prompt()
    assert "uptime()" not in before
    assert "- uptime(): Seconds since boot." in after


@given(st.sampled_from(list(EVENT_ADAPTER.json_schema()["discriminator"]["mapping"])))
def test_every_event_type_is_its_class_name(type_name: str) -> None:
    schema = EVENT_ADAPTER.json_schema()
    ref = schema["discriminator"]["mapping"][type_name]
    assert ref.endswith("/" + type_name)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.sampled_from(["<start_of_turn>", "<end_of_turn>", "model\n", "x", "<", ">"]), max_size=12
    ).map("".join)
)
def test_text_from_outside_can_never_open_or_close_a_turn(hostile: str) -> None:
    gemma = GEMMA3
    reg = Registry()
    reg.add(lambda: hostile, SkillOptions(name="echo"))

    class Formatted(MockModel):
        chat_format = gemma

    model = Formatted(['{"skill_name": "echo"}', '{"final_answer": "ok"}'])
    Agent(model, reg).run(hostile)
    # Exactly the markers the format itself wrote: two user turns, two model turns, one reply.
    assert model.prompts[1].count("<start_of_turn>") == 4
    assert model.prompts[1].count("<end_of_turn>") == 3
