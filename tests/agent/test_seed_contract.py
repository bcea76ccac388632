"""The seed's own examples and contract (shared/seed/agent-core-loop), through the public API
alone, with a bare ``Agent`` built as the seed signs it: model, registry, soul, no validators.

Grounding is the daemon's promise, not the seed's: with ``grounding=Grounding()`` the same run
is held to the rules, and without it a final answer returns at once, as the seed says.
"""

from __future__ import annotations

import dataclasses

import pytest

import edge_agentd
from edge_agentd import (
    Agent,
    AgentState,
    CallSkillAction,
    FinalAnswerAction,
    Grounding,
    MaxIterationsObservation,
    MockModel,
    Registry,
    Result,
    SkillResultObservation,
    Soul,
    ToolErrorObservation,
    ValidationErrorObservation,
    Workflow,
    get_registry,
)


def home() -> Registry:
    registry = Registry()

    @registry.skill
    def cpu_temperature() -> float:
        """The CPU temperature in degrees Celsius."""
        return 48.3

    @registry.skill
    def broken() -> float:
        """A skill that fails."""
        raise OSError("the sensor is unplugged")

    return registry


def types(state: AgentState) -> list[str]:
    return [event.type for event in state.stream]


def test_the_class_signature_is_the_seeds() -> None:
    fields = {f.name: f for f in dataclasses.fields(Agent)}
    assert list(fields)[:3] == ["model", "registry", "soul"]
    assert fields["registry"].default_factory is get_registry  # type: ignore[comparison-overlap]
    assert fields["soul"].kw_only and fields["soul"].default is None
    # Everything the project adds after the seed's three fields is keyword-only and optional.
    for name, field in list(fields.items())[3:]:
        assert field.kw_only, name
        assert field.default is not dataclasses.MISSING or (
            field.default_factory is not dataclasses.MISSING
        ), name
    assert Agent(MockModel([])).registry is get_registry()


def test_a_first_step_final_answer_returns_at_once() -> None:
    """The seed's step 2: a FinalAnswerAction returns at once, whatever it says."""
    model = MockModel(['{"final_answer": "48 C"}'])
    state = Agent(model, home()).run("How warm is the CPU?")
    assert types(state) == ["FinalAnswerAction"]
    assert state.outcome == "answered"
    assert state.final_answer == "48 C"
    assert len(model.prompts) == 1


def test_grounding_is_one_argument_away_and_named_so() -> None:
    model = MockModel(['{"final_answer": "It is warm."}', '{"final_answer": "I cannot tell."}'])
    state = Agent(model, home(), grounding=Grounding()).run("How warm is the CPU?")
    assert types(state) == ["FinalAnswerAction", "ValidationErrorObservation", "FinalAnswerAction"]
    refused = state.stream[1]
    assert isinstance(refused, ValidationErrorObservation)
    assert (refused.validator_name, refused.error_type) == ("grounding", "no_evidence")
    assert state.final_answer == "I cannot tell."


def test_grounding_runs_before_the_workflows_own_validators() -> None:
    seen: list[str] = []

    def checked(action: FinalAnswerAction, state: AgentState) -> Result:
        seen.append(action.answer)
        return Result(True)

    workflow = Workflow("check", validators=[checked])
    model = MockModel(['{"final_answer": "48 C"}', '{"final_answer": "I cannot tell."}'])
    state = Agent(model, home(), grounding=Grounding()).run(workflow, query="How warm?")
    assert seen == ["I cannot tell."]  # the ungrounded answer never reached the workflow's check
    assert state.outcome == "answered"


@pytest.mark.parametrize(
    ("reply", "validator", "error_type"),
    [
        ("not json", "action_parse", "json_syntax"),
        ('{"thought": "hm"}', "action_parse", "missing_field"),
        ('{"skill_name": "weather_in_taipei"}', "action_parse", "unknown_skill"),
        ('{"final_answer": "   "}', "non_empty_final_answer", None),
    ],
)
def test_step_keeps_the_four_parse_cases_apart(
    reply: str, validator: str, error_type: str | None
) -> None:
    observed = Agent(MockModel([reply]), home()).step(AgentState(query="How warm?"))
    assert isinstance(observed, ValidationErrorObservation)
    assert (observed.validator_name, observed.error_type) == (validator, error_type)


def test_a_call_is_dispatched_and_its_value_wrapped_then_the_answer_returns() -> None:
    model = MockModel(['{"skill_name": "cpu_temperature"}', '{"final_answer": "48.3 °C"}'])
    state = Agent(model, home()).run("How warm is the CPU?")
    assert types(state) == ["CallSkillAction", "SkillResultObservation", "FinalAnswerAction"]
    result = state.stream[1]
    assert isinstance(result, SkillResultObservation) and result.result == 48.3


def test_validation_feedback_is_shown_and_the_counter_never_resets() -> None:
    model = MockModel(["oops", '{"skill_name": "cpu_temperature"}', "oops again", "and again"])
    state = Agent(model, home()).run("How warm?", max_retries=2)
    assert types(state)[-1] == "ValidationErrorObservation"
    assert state.outcome == "retries_exhausted"
    assert "oops" in model.prompts[1] or "json" in model.prompts[1].lower()


def test_a_failing_skill_is_a_tool_error_listing_the_skills() -> None:
    model = MockModel(['{"skill_name": "broken"}', '{"final_answer": "It failed."}'])
    state = Agent(model, home()).run("How warm?")
    error = state.stream[1]
    assert isinstance(error, ToolErrorObservation)
    assert "unplugged" in error.error
    assert set(error.available_skills) == {"cpu_temperature", "broken"}
    assert state.final_answer == "It failed."


def test_max_iterations_ends_with_its_observation_and_a_deep_copy() -> None:
    call = '{"skill_name": "cpu_temperature"}'
    state = Agent(MockModel([call] * 8), home()).run("How warm?")
    last = state.stream[-1]
    assert isinstance(last, MaxIterationsObservation)
    assert last.iterations == 8  # the framework's default
    assert "cpu_temperature" in last.last_action_summary
    assert last.partial_state.stream.root is not state.stream.root
    assert sum(isinstance(e, CallSkillAction) for e in state.stream) == 8


def test_the_small_model_override_is_the_callers() -> None:
    call = '{"skill_name": "cpu_temperature"}'
    state = Agent(MockModel([call] * 12), home()).run("How warm?", max_iterations=12)
    last = state.stream[-1]
    assert isinstance(last, MaxIterationsObservation) and last.iterations == 12


def test_a_workflow_with_no_query_and_no_model_are_caller_bugs() -> None:
    with pytest.raises(TypeError):
        Agent(MockModel([]), home()).run(Workflow("weather"))
    with pytest.raises(TypeError):
        Agent(None, home())  # type: ignore[arg-type]


def test_the_soul_is_the_system_prompt_and_runs_start_blank() -> None:
    model = MockModel(['{"final_answer": "Hi."}', '{"final_answer": "Hi again."}'])
    agent = Agent(model, home(), soul=Soul(name="shelf-pi"))
    first, second = agent.run("Hello?"), agent.run("Hello?")
    assert "shelf-pi" in model.prompts[0]
    assert model.prompts[0] == model.prompts[1]  # no conversation carried over
    assert (first.final_answer, second.final_answer) == ("Hi.", "Hi again.")


def test_the_seeds_names_are_public() -> None:
    for name in ("Agent", "ModelHandle", "MockModel", "Registry", "get_registry", "skill",
                 "Result", "Soul", "Workflow", "AgentState", "EventStream", "Grounding"):  # fmt: skip
        assert hasattr(edge_agentd, name), name
