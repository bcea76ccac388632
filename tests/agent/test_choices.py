"""A skill's arguments' choices as the device has them now (issue 41, "Calls bound to what
exists"): shown in the catalogue, held by the grammar, checked before the call, read afresh at
each run, and a plugin gets them with one line."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd import (
    Agent,
    Grounding,
    MockModel,
    Registry,
    SkillResultObservation,
    ValidationErrorObservation,
)
from edge_agentd.agent.skillspec import MAX_CHOICES


def doors(present: list[str], asked: list[str] | None = None) -> Registry:
    registry = Registry()

    @registry.skill(choices=lambda: {"door": present})
    def door_state(door: str) -> dict[str, str]:
        """Whether a door is open or closed."""
        if asked is not None:
            asked.append(door)
        return {"door": door, "state": "closed"}

    return registry


def call(door: str) -> str:
    return json.dumps({"skill_name": "door_state", "arguments": {"door": door}})


def test_the_catalogue_shows_each_value_the_device_has_now() -> None:
    agent = Agent(MockModel([]), doors(["front", "back"]))
    assert '- door_state(door: "front" | "back"): Whether a door is open or closed.' in (
        agent.system_prompt()
    )


def test_the_grammar_holds_the_argument_to_them() -> None:
    model = MockModel([call("front"), '{"final_answer": "Closed."}'], uses_action_schema=True)
    Agent(model, doors(["front", "back"])).run("Is the front door open?")
    branch = model.calls[0]["action_schema"]["oneOf"][0]
    assert branch["properties"]["arguments"]["properties"]["door"] == {"enum": ["front", "back"]}


def test_a_value_the_device_does_not_have_is_refused_with_the_ones_it_has() -> None:
    ran: list[str] = []
    registry = doors(["front", "back"], ran)
    model = MockModel([call("garage"), call("back"), '{"final_answer": "It is closed."}'])
    state = Agent(model, registry).run("Is the garage door open?")
    refused, result = state.stream[1], state.stream[3]
    assert isinstance(refused, ValidationErrorObservation)
    assert refused.validator_name == "skill_arguments"
    assert refused.feedback == (
        'door_state: door must be one of "front", "back"; "garage" is none of them'
    )
    assert isinstance(result, SkillResultObservation) and result.result["door"] == "back"
    # The refused call never reached the skill: its feedback is in the next prompt instead.
    assert '"garage" is none of them' in model.prompts[1]
    assert ran == ["back"]


def test_choices_are_read_afresh_at_each_run_and_the_preamble_kept_while_they_hold() -> None:
    present = ["front"]
    registry = doors(present)
    agent = Agent(MockModel([]), registry)
    first = agent.preamble()
    assert first == agent.preamble()  # nothing changed: byte-identical
    present.append("back")  # a door sensor was added
    second = agent.preamble()
    assert second != first and '"front" | "back"' in second


def test_a_run_keeps_the_choices_it_began_with() -> None:
    present = ["front"]
    registry = Registry()

    @registry.skill(choices=lambda: {"door": present})
    def door_state(door: str) -> dict[str, str]:
        """Whether a door is open or closed."""
        present.append("back")  # a door sensor appears while the run goes on
        return {"door": door, "state": "closed"}

    model = MockModel([call("front"), '{"final_answer": "The front door is closed."}'])
    state = Agent(model, registry).run("Is the front door open?")
    assert state.outcome == "answered"
    # Its second prompt extends its first: the catalogue it began with, not the new door.
    assert model.prompts[1].startswith(model.prompts[0])
    assert 'door_state(door: "front")' in model.prompts[1]
    assert '"front" | "back"' in Agent(MockModel([]), registry).system_prompt()


def test_with_grounding_an_answer_after_a_refused_choice_needs_a_result() -> None:
    model = MockModel([call("garage"), '{"final_answer": "The garage door is closed."}',
                       '{"final_answer": "I cannot tell."}'])  # fmt: skip
    state = Agent(model, doors(["front"]), grounding=Grounding()).run("Is the garage door open?")
    assert [e.type for e in state.stream] == [
        "CallSkillAction", "ValidationErrorObservation", "FinalAnswerAction",
        "ValidationErrorObservation", "FinalAnswerAction",
    ]  # fmt: skip
    assert state.final_answer == "I cannot tell."


def test_a_skill_without_choices_is_unchanged() -> None:
    registry = Registry()

    @registry.skill
    def echo(text: str) -> str:
        """Say it back."""
        return text

    spec = registry.get("echo")
    assert spec is not None
    assert spec.current_choices() == ()
    assert spec.schema_with(()) is spec.parameters_schema
    assert registry.choices() == ()


def hostile_registry(choices: Any) -> Registry:
    registry = Registry()

    @registry.skill(choices=choices)
    def pick(name: str, count: int = 1, flag: bool | None = None) -> str:
        """Pick something."""
        return name * count

    return registry


def test_a_choices_function_that_raises_restricts_nothing_and_the_skill_still_works() -> None:
    def broken() -> dict[str, list[str]]:
        raise RuntimeError("the bus is gone")

    registry = hostile_registry(broken)
    assert registry.choices() == ()
    model = MockModel(['{"skill_name": "pick", "arguments": {"name": "x"}}', '{"final_answer": "x"}'])
    state = Agent(model, registry).run("Pick x")
    assert isinstance(state.stream[1], SkillResultObservation)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.lists(
            st.one_of(
                st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
                st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
            ),
            max_size=MAX_CHOICES * 2,
        ),
        max_size=5,
    )
)
def test_any_choices_a_plugin_gives_are_held_to_its_arguments(given_choices: dict[str, list[Any]]) -> None:
    registry = hostile_registry(lambda: given_choices)
    spec = registry.get("pick")
    assert spec is not None
    listed = spec.current_choices()
    types = {"name": str, "count": int, "flag": bool}
    for argument, values in listed:
        assert argument in types
        assert 0 < len(values) <= MAX_CHOICES
        for value in values:
            # Only values the argument takes as they are: no list, no dict, no coerced number.
            assert value is None or type(value) is types[argument]
    schema = spec.schema_with(listed)
    json.dumps(schema)  # the grammar's input stays JSON
    assert spec.signature_with(listed).startswith("pick(")
