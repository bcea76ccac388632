"""docs/design.md's loop contract and its Decisions 1-10, one test each, with MockModel."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from edge_agentd import (
    Agent,
    AgentState,
    CallSkillAction,
    Completion,
    ContextExceeded,
    FinalAnswerAction,
    InterruptedObservation,
    MaxIterationsObservation,
    MockModel,
    ModelErrorObservation,
    Registry,
    Result,
    SkillResultObservation,
    Soul,
    ToolErrorObservation,
    Usage,
    ValidationErrorObservation,
    Workflow,
    get_registry,
    skill,
)
from edge_agentd.agent.registry import SkillOptions

CALL_CPU = '{"skill_name": "cpu_temperature", "arguments": {}}'
ANSWER = '{"final_answer": "I cannot tell how hot it is."}'


RegistryFactory = Callable[..., Registry]  # conftest.py
Run = Callable[..., tuple[AgentState, MockModel]]


@pytest.fixture
def run(make_registry: RegistryFactory) -> Run:
    """Run "How hot is it?" over the home registry with a MockModel replaying ``replies``."""

    def run_home(replies: list[str], **kwargs: Any) -> tuple[AgentState, MockModel]:
        model = MockModel(replies)
        state = Agent(model, make_registry()).run("How hot is it?", **kwargs)
        return state, model

    return run_home


def types(state: AgentState) -> list[str]:
    return [event.type for event in state.stream]


# -- the four parse cases, and docs/design.md Decisions 1 and 2 -----------------------------


@pytest.mark.parametrize(
    ("reply", "validator", "error_type"),
    [
        ("not json at all", "action_parse", "json_syntax"),
        ('{"skill_name": "cpu_temperature",', "action_parse", "json_syntax"),
        ('{"thought": "hmm"}', "action_parse", "missing_field"),
        ('{"skill_name": "teleport", "arguments": {}}', "action_parse", "unknown_skill"),
        ('{"final_answer": "   \\n "}', "non_empty_final_answer", None),
        (
            '{"final_answer": "x", "skill_name": "cpu_temperature"}',
            "action_parse",
            "ambiguous_action",
        ),
        ("[1, 2, 3]", "action_parse", "missing_field"),
        ('"just a string"', "action_parse", "missing_field"),
        ('{"skill_name": "cpu_temperature", "args": {}}', "action_parse", "unknown_field"),
        ('{"skill_name": 7}', "action_parse", "invalid_field"),
        ('{"skill_name": "read_sensor", "arguments": [1]}', "action_parse", "invalid_field"),
        ('{"final_answer": 42}', "action_parse", "invalid_field"),
        ("Sure! ```json\n" + ANSWER + "\n```", "action_parse", "json_syntax"),
    ],
)
def test_step_parse_failures_are_kept_strictly_apart(
    make_registry: RegistryFactory, reply: str, validator: str, error_type: str | None
) -> None:
    agent = Agent(MockModel([reply]), make_registry())
    event = agent.step(AgentState(query="q"))
    assert isinstance(event, ValidationErrorObservation)
    assert (event.validator_name, event.error_type) == (validator, error_type)
    assert event.raw == reply
    assert event.feedback


@pytest.mark.parametrize(
    "reply", [ANSWER, f"  {ANSWER}\n", f"```json\n{ANSWER}\n```", f"```\n{ANSWER}\n```"]
)
def test_whitespace_and_one_fence_are_stripped(make_registry: RegistryFactory, reply: str) -> None:
    event = Agent(MockModel([reply]), make_registry()).step(AgentState(query="q"))
    assert isinstance(event, FinalAnswerAction)
    assert event.answer == "I cannot tell how hot it is."
    assert event.raw == reply


def test_arguments_may_be_left_out_and_thought_is_kept(make_registry: RegistryFactory) -> None:
    reply = '{"thought": "need data", "skill_name": "cpu_temperature"}'
    event = Agent(MockModel([reply]), make_registry()).step(AgentState(query="q"))
    assert isinstance(event, CallSkillAction)
    assert (event.skill_name, event.arguments, event.thought) == (
        "cpu_temperature",
        {},
        "need data",
    )


def test_unparseable_text_never_becomes_an_answer(run: Run) -> None:
    state, _ = run(["The temperature is 48.5 °C."] * 4)
    assert state.final_answer is None
    assert not any(isinstance(e, FinalAnswerAction) for e in state.stream)
    assert state.outcome == "retries_exhausted"
    assert all(e.error_type == "json_syntax" for e in state.stream)  # type: ignore[union-attr]


def test_step_does_not_append(make_registry: RegistryFactory) -> None:
    agent = Agent(MockModel([CALL_CPU]), make_registry())
    state = AgentState(query="q")
    event = agent.step(state)
    assert isinstance(event, CallSkillAction)
    assert len(state.stream) == 0


# -- the loop --------------------------------------------------------------------------------


def test_a_skill_call_then_an_answer(run: Run) -> None:
    state, model = run([CALL_CPU, ANSWER])
    assert types(state) == ["CallSkillAction", "SkillResultObservation", "FinalAnswerAction"]
    assert state.stream[1] == SkillResultObservation(
        skill_name="cpu_temperature", result=48.5, call_id="call_1"
    )
    assert state.outcome == "answered"
    assert state.final_answer == "I cannot tell how hot it is."
    assert "Result of cpu_temperature: 48.5" in model.prompts[1]


def test_retry_budget_counts_across_the_run_and_is_never_reset(run: Run) -> None:
    bad = "nonsense"
    state, model = run([bad, CALL_CPU, bad, CALL_CPU, bad, CALL_CPU, bad, ANSWER], max_retries=3)
    failures = [e for e in state.stream if isinstance(e, ValidationErrorObservation)]
    assert [f.will_retry for f in failures] == [True, True, True, False]
    assert state.outcome == "retries_exhausted"
    assert state.stream[-1] is failures[-1]
    assert len(model.prompts) == 7


def test_skill_argument_errors_use_the_retry_budget_and_name_the_field(run: Run) -> None:
    bad_call = '{"skill_name": "read_sensor", "arguments": {"nmae": "attic"}}'
    state, model = run([bad_call, ANSWER], max_retries=1)
    error = state.stream[1]
    assert isinstance(error, ValidationErrorObservation)
    assert error.validator_name == "skill_arguments"
    assert "'name'" in error.feedback and "'nmae'" in error.feedback
    assert error.will_retry
    assert error.feedback in model.prompts[1]
    assert "Redo your last action" in model.prompts[1]
    assert state.outcome == "answered"


def test_max_retries_zero_stops_at_the_first_failure(run: Run) -> None:
    state, model = run(["nope", ANSWER], max_retries=0)
    assert types(state) == ["ValidationErrorObservation"]
    assert state.stream[0].will_retry is False  # type: ignore[union-attr]
    assert state.outcome == "retries_exhausted"
    assert len(model.prompts) == 1


def test_max_iterations_defaults_to_eight(run: Run) -> None:
    state, model = run([CALL_CPU] * 20)
    assert len(model.prompts) == 8
    last = state.stream[-1]
    assert isinstance(last, MaxIterationsObservation)
    assert last.iterations == 8
    assert state.outcome == "max_iterations"
    assert last.last_action_summary == "call cpu_temperature {}"


def test_small_model_override_of_twelve_iterations(run: Run) -> None:
    state, model = run([CALL_CPU] * 11 + [ANSWER], max_iterations=12)
    assert len(model.prompts) == 12
    assert state.outcome == "answered"


def test_partial_state_is_a_deep_copy(run: Run) -> None:
    state, _ = run([CALL_CPU] * 3, max_iterations=3)
    last = state.stream[-1]
    assert isinstance(last, MaxIterationsObservation)
    partial = last.partial_state
    assert partial is not state
    assert partial.stream is not state.stream
    assert list(partial.stream) == list(state.stream)[:-1]
    state.stream.append(InterruptedObservation(reason="later"))
    assert len(partial.stream) == 6


def test_tool_error_shows_the_error_and_lists_the_skills(run: Run) -> None:
    state, model = run(['{"skill_name": "explode"}', ANSWER])
    error = state.stream[1]
    assert isinstance(error, ToolErrorObservation)
    assert "the sensor bus is on fire" in error.error
    assert error.available_skills == ["cpu_temperature", "read_sensor", "explode"]
    assert "Available skills: cpu_temperature, read_sensor, explode" in model.prompts[1]
    assert state.outcome == "answered"


def test_a_skill_gone_at_dispatch_time_is_a_tool_error_with_the_skills(
    make_registry: RegistryFactory,
) -> None:
    registry = make_registry()

    class RacingModel:
        def generate(self, prompt: str, **kwargs: Any) -> str:
            registry.remove("explode")
            return '{"skill_name": "explode"}'

    state = Agent(RacingModel(), registry).run("q", max_iterations=1)
    error = state.stream[1]
    assert isinstance(error, ToolErrorObservation)
    assert "no skill named 'explode'" in error.error
    assert error.available_skills == ["cpu_temperature", "read_sensor"]


def test_a_model_that_raises_never_escapes(make_registry: RegistryFactory) -> None:
    class Broken:
        calls = 0

        def generate(self, prompt: str, **kwargs: Any) -> str:
            self.calls += 1
            raise OSError("llama.cpp fell over")

    model = Broken()
    state = Agent(model, make_registry()).run("q", max_retries=2)
    assert types(state) == ["ModelErrorObservation"] * 3
    assert [e.will_retry for e in state.stream] == [True, True, False]  # type: ignore[union-attr]
    assert "llama.cpp fell over" in state.stream[0].error  # type: ignore[union-attr]
    assert state.outcome == "retries_exhausted"
    assert model.calls == 3


def test_an_exhausted_mock_model_is_recorded_like_any_model_error(run: Run) -> None:
    state, _ = run([CALL_CPU], max_retries=0)
    error = state.stream[-1]
    assert isinstance(error, ModelErrorObservation)
    assert error.code == "mock_exhausted"
    assert state.outcome == "retries_exhausted"


def test_context_exceeded_carries_its_numbers(make_registry: RegistryFactory) -> None:
    class Full:
        def generate(self, prompt: str, **kwargs: Any) -> str:
            raise ContextExceeded(5000, 4096)

    state = Agent(Full(), make_registry()).run("q", max_retries=0)
    error = state.stream[0]
    assert isinstance(error, ModelErrorObservation)
    assert (error.code, error.n_prompt_tokens, error.n_ctx) == ("context_exceeded", 5000, 4096)


def test_usage_and_timing_are_recorded_on_each_action(make_registry: RegistryFactory) -> None:
    usage = Usage(prompt_tokens=120, evaluated_tokens=12, generated_tokens=9, stop="stop")

    class Reporting:
        def generate(self, prompt: str, **kwargs: Any) -> str:
            return Completion(ANSWER, usage)

    state = Agent(Reporting(), make_registry()).run("q")
    action = state.stream[0]
    assert isinstance(action, FinalAnswerAction)
    assert action.usage is not None
    assert (action.usage.prompt_tokens, action.usage.evaluated_tokens) == (120, 12)
    assert action.usage.generated_tokens == 9
    assert action.usage.model_s > 0
    assert type(action.raw) is str


def test_a_reply_cut_at_the_token_cap_is_reported_as_such(make_registry: RegistryFactory) -> None:
    class Cut:
        def generate(self, prompt: str, **kwargs: Any) -> str:
            return Completion(
                '{"final_answer": "It is 4', Usage(generated_tokens=256, stop="length")
            )

    state = Agent(Cut(), make_registry()).run("q", max_retries=0)
    error = state.stream[0]
    assert isinstance(error, ValidationErrorObservation)
    assert error.error_type == "truncated"
    assert "cut off" in error.feedback and "256" in error.feedback


def test_the_model_is_given_the_action_schema(make_registry: RegistryFactory) -> None:
    model = MockModel([CALL_CPU, ANSWER], uses_action_schema=True)
    Agent(model, make_registry()).run("q")
    # The seed's Agent holds nothing back: every step's schema has every branch. (With grounding
    # the first step's is the calls alone: tests/agent/test_grounding.py.)
    assert model.calls[0]["action_schema"] == model.calls[1]["action_schema"]
    schema = model.calls[1]["action_schema"]
    branches = schema["oneOf"]
    assert [b["properties"].get("skill_name", {}).get("const") for b in branches] == [
        "cpu_temperature",
        "read_sensor",
        "explode",
        None,
    ]
    assert branches[1]["properties"]["arguments"]["required"] == ["name"]
    assert branches[-1]["required"] == ["final_answer"]


# -- results, deadlines, cancellation --------------------------------------------------------


class Reading(BaseModel):
    celsius: float


@dataclasses.dataclass
class Point:
    x: int
    tags: set[str]


class Opaque:
    def __str__(self) -> str:
        return "<opaque thing>"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Reading(celsius=21.5), {"celsius": 21.5}),
        (Point(1, {"a"}), {"x": 1, "tags": ["a"]}),
        (Opaque(), "<opaque thing>"),
        ({1: (2, 3)}, {"1": [2, 3]}),
        (float("nan"), "nan"),
    ],
)
def test_skill_results_are_made_json_safe(value: object, expected: object) -> None:
    registry = Registry()
    registry.add(lambda: value, SkillOptions(name="thing"))
    state = Agent(MockModel(['{"skill_name": "thing"}', ANSWER]), registry).run("q")
    result = state.stream[1]
    assert isinstance(result, SkillResultObservation)
    assert result.result == expected
    json.dumps(result.result)


def test_an_oversized_result_is_cut_with_a_visible_marker() -> None:
    registry = Registry()
    registry.add(lambda: "x" * 10_000, SkillOptions(name="dump"))
    model = MockModel(['{"skill_name": "dump"}', ANSWER])
    state = Agent(model, registry, max_result_chars=500).run("q")
    result = state.stream[1]
    assert isinstance(result, SkillResultObservation)
    assert result.truncated
    assert result.result.startswith("x" * 500)
    assert result.result.endswith("[truncated 9500 more characters]")
    assert "x" * 501 not in model.prompts[1]


def test_a_hung_skill_times_out_and_the_loop_carries_on() -> None:
    registry = Registry()
    release = __import__("threading").Event()

    @registry.skill(timeout=0.2)
    def hang() -> str:
        """Never returns in time."""
        release.wait(10)
        return "late"

    @registry.skill
    def quick() -> str:
        """Returns at once."""
        return "fine"

    calls = ['{"skill_name": "hang"}', '{"skill_name": "hang"}', '{"skill_name": "quick"}', ANSWER]
    try:
        state = Agent(MockModel(calls), registry).run("q")
    finally:
        release.set()
    assert isinstance(state.stream[1], ToolErrorObservation)
    assert "timeout" in state.stream[1].error
    assert isinstance(state.stream[3], ToolErrorObservation)
    assert "still running" in state.stream[3].error
    assert state.stream[5] == SkillResultObservation(
        skill_name="quick", result="fine", call_id="call_3"
    )
    assert state.outcome == "answered"


def test_a_passed_deadline_interrupts_between_steps(run: Run) -> None:
    state, model = run([CALL_CPU] * 5, deadline=time.monotonic() - 1)
    assert types(state) == ["InterruptedObservation"]
    assert state.stream[0] == InterruptedObservation(reason="deadline")
    assert state.outcome == "interrupted"
    assert model.prompts == []


def test_cancel_is_checked_between_steps(run: Run) -> None:
    seen: list[str] = []
    state, model = run(
        [CALL_CPU] * 5, should_stop=lambda: len(seen) >= 2, on_event=lambda e: seen.append(e.type)
    )
    assert types(state) == ["CallSkillAction", "SkillResultObservation", "InterruptedObservation"]
    assert state.stream[-1] == InterruptedObservation(reason="cancelled")
    assert seen == types(state)
    assert len(model.prompts) == 1


# -- caller bugs raise, nothing else does ---------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.run(Workflow(name="w")),
        lambda a: a.run(42),
        lambda a: a.run(None),
        lambda a: a.run("q", query="again"),
        lambda a: a.run(Workflow(name="w"), query=7),
        lambda a: a.run("q", max_iterations="8"),
        lambda a: a.run("q", max_iterations=True),
        lambda a: a.run("q", max_retries=1.5),
        lambda a: a.run("q", deadline="soon"),
        lambda a: a.step("not a state"),
    ],
)
def test_caller_bugs_raise_type_errors(make_registry: RegistryFactory, call: Any) -> None:
    with pytest.raises(TypeError):
        call(Agent(MockModel([ANSWER]), make_registry()))


@pytest.mark.parametrize("kwargs", [{"max_iterations": 0}, {"max_retries": -1}])
def test_out_of_range_limits_raise(make_registry: RegistryFactory, kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        Agent(MockModel([ANSWER]), make_registry()).run("q", **kwargs)


@pytest.mark.parametrize("model", [None, object(), "gemma"])
def test_an_agent_without_a_model_is_a_caller_bug(model: Any) -> None:
    with pytest.raises(TypeError):
        Agent(model)


# -- statelessness, the process-wide registry, Soul and Workflow -----------------------------


def test_the_agent_keeps_no_state_between_runs(make_registry: RegistryFactory) -> None:
    model = MockModel([CALL_CPU, ANSWER, CALL_CPU, ANSWER])
    agent = Agent(model, make_registry())
    first = agent.run("How hot is it?")
    second = agent.run("How hot is it?")
    assert first is not second and first.stream is not second.stream
    assert model.prompts[2] == model.prompts[0]
    assert model.prompts[3] == model.prompts[1]
    assert STATE_DUMP(first) == STATE_DUMP(second)


def STATE_DUMP(state: AgentState) -> Any:
    from edge_agentd import STATE_ADAPTER

    dumped = STATE_ADAPTER.dump_python(state, mode="json")
    for event in dumped["events"]:
        if event.get("usage"):
            event["usage"]["model_s"] = 0
    return dumped


def test_the_default_registry_is_process_wide() -> None:
    assert get_registry() is get_registry()
    assert Agent(MockModel([])).registry is get_registry()

    @skill(name="edge_agent_test_clock")
    def clock() -> str:
        """What time it is."""
        return "noon"

    try:
        assert get_registry().get("edge_agent_test_clock") is not None
        reply = '{"skill_name": "edge_agent_test_clock"}'
        state = Agent(MockModel([reply, ANSWER])).run("q")
        assert state.stream[1] == SkillResultObservation(
            skill_name="edge_agent_test_clock", result="noon", call_id="call_1"
        )
    finally:
        get_registry().remove("edge_agent_test_clock")


def test_the_soul_is_the_top_of_the_system_prompt(make_registry: RegistryFactory) -> None:
    model = MockModel([ANSWER])
    Agent(model, make_registry(), soul=Soul(name="Hestia", persona="You keep the house.")).run("q")
    assert "Your name is Hestia. You keep the house." in model.prompts[0]
    with pytest.raises(TypeError):
        Agent(model, make_registry(), soul="Hestia")  # type: ignore[arg-type]


def test_a_workflow_limits_skills_adds_instructions_and_checks_answers(
    make_registry: RegistryFactory,
) -> None:
    def mentions_celsius(action: FinalAnswerAction, state: AgentState) -> Result:
        return Result("°C" in action.answer, "Give the temperature in °C.")

    workflow = Workflow(
        name="climate",
        instructions="Only talk about temperatures.",
        skills=["read_sensor"],
        validators=[mentions_celsius],
        max_iterations=5,
    )
    read = '{"skill_name": "read_sensor", "arguments": {"name": "attic"}}'
    replies = [CALL_CPU, read, '{"final_answer": "warm"}', '{"final_answer": "21.5 (in °C)"}']
    model = MockModel(replies)
    state = Agent(model, make_registry()).run(workflow, query="How warm is the attic?")
    assert "Only talk about temperatures." in model.prompts[0]
    assert "- read_sensor(name: string, precise: boolean = false)" in model.prompts[0]
    assert "cpu_temperature" not in model.prompts[0].split("User:")[0].split("Skills")[1]
    first = state.stream[0]
    assert isinstance(first, ValidationErrorObservation) and first.error_type == "unknown_skill"
    check = state.stream[4]
    assert isinstance(check, ValidationErrorObservation)
    assert (check.validator_name, check.feedback) == (
        "mentions_celsius",
        "Give the temperature in °C.",
    )
    assert state.outcome == "answered"
    assert model.calls[0]["action_schema"]["oneOf"][0]["properties"]["skill_name"] == {
        "const": "read_sensor"
    }


def test_a_workflow_sets_the_default_iterations(make_registry: RegistryFactory) -> None:
    workflow = Workflow(name="short", max_iterations=2)
    state = Agent(MockModel([CALL_CPU] * 5), make_registry()).run(workflow, query="q")
    assert state.outcome == "max_iterations"
    assert state.stream[-1].iterations == 2  # type: ignore[union-attr]


def test_a_validator_that_crashes_is_a_failed_check_not_an_escape(
    make_registry: RegistryFactory,
) -> None:
    def broken(action: FinalAnswerAction, state: AgentState) -> Result:
        raise KeyError("oops")

    workflow = Workflow(name="w", validators=[broken])
    state = Agent(MockModel([ANSWER]), make_registry()).run(workflow, query="q", max_retries=0)
    assert state.outcome == "retries_exhausted"
    assert state.stream[-1].validator_name == "broken"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": ""},
        {"name": "w", "skills": "read_sensor"},
        {"name": "w", "validators": [42]},
        {"name": "w", "max_iterations": 0},
    ],
)
def test_bad_workflows_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        Workflow(**kwargs)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_constants_are_json_syntax_errors(
    make_registry: RegistryFactory, constant: str
) -> None:
    reply = f'{{"skill_name": "read_sensor", "arguments": {{"name": {constant}}}}}'
    event = Agent(MockModel([reply]), make_registry()).step(AgentState(query="q"))
    assert isinstance(event, ValidationErrorObservation)
    assert event.error_type == "json_syntax"
    assert constant in event.feedback


def test_a_hung_skill_that_returns_late_never_touches_the_finished_run() -> None:
    import threading

    registry = Registry()
    returned = threading.Event()

    @registry.skill(timeout=0.1)
    def slow() -> str:
        """Returns after its timeout."""
        time.sleep(0.4)
        returned.set()
        return "too late"

    seen: list[str] = []
    state = Agent(MockModel(['{"skill_name": "slow"}', ANSWER]), registry).run(
        "q", on_event=lambda e: seen.append(e.type)
    )
    assert types(state) == ["CallSkillAction", "ToolErrorObservation", "FinalAnswerAction"]
    assert "ran past its 0.1 s timeout" in state.stream[1].error  # type: ignore[union-attr]
    assert returned.wait(2)
    time.sleep(0.05)
    assert types(state) == ["CallSkillAction", "ToolErrorObservation", "FinalAnswerAction"]
    assert seen == types(state)


def test_an_on_event_callback_that_raises_is_the_callers_bug(
    make_registry: RegistryFactory,
) -> None:
    def refuse(event: object) -> None:
        raise LookupError("the caller's callback broke")

    with pytest.raises(LookupError, match="callback broke"):
        Agent(MockModel([ANSWER]), make_registry()).run("q", on_event=refuse)


def test_skills_without_a_timeout_run_inline_and_may_take_their_time() -> None:
    registry = Registry()

    @registry.skill(timeout=None)
    def patient() -> str:
        """Takes longer than the default poll."""
        time.sleep(0.15)
        return "done"

    state = Agent(MockModel(['{"skill_name": "patient"}', ANSWER]), registry).run("q")
    assert state.stream[1] == SkillResultObservation(
        skill_name="patient", result="done", call_id="call_1"
    )


# -- Agent.start: the run without a waiting caller (how the daemon runs it) --------------------


def _watch(ticket: Any, limit_s: float = 30.0) -> None:
    """Call check() as the daemon's serving loop does, until the run is over."""
    until = time.monotonic() + limit_s
    while not ticket.wait(0.02):
        assert time.monotonic() < until, "the run did not end"
        ticket.check()


def test_start_reports_the_finished_run_once_and_reuses_its_thread() -> None:
    registry = Registry()
    registry.add(lambda: 48.5, SkillOptions(name="cpu_temperature", timeout=None))
    agent = Agent(MockModel([CALL_CPU, ANSWER, CALL_CPU, ANSWER]), registry)
    threading = __import__("threading")
    done: list[tuple[AgentState, BaseException | None, Any]] = []

    def on_done(state: AgentState, error: BaseException | None) -> None:
        done.append((state, error, threading.current_thread()))

    first = agent.start("How hot is it?", on_done=on_done)
    _watch(first)
    second = agent.start("And now?", on_done=on_done)
    _watch(second)
    assert [(s.outcome, s.final_answer, e) for s, e, _ in done] == [
        ("answered", "I cannot tell how hot it is.", None),
        ("answered", "I cannot tell how hot it is.", None),
    ]
    # Both ran on the same pooled thread, not this one: a run costs no new thread.
    assert done[0][2] is done[1][2]
    assert done[0][2] is not threading.current_thread()
    assert done[0][2].name == "edge-agent-run-loop"
    assert first.done and second.done


def test_start_abandons_a_hung_skill_when_checked_and_carries_the_run_on() -> None:
    registry = Registry()
    release = __import__("threading").Event()

    @registry.skill(timeout=0.2)
    def hang() -> str:
        """Never returns in time."""
        release.wait(10)
        return "late"

    done: list[AgentState] = []
    agent = Agent(MockModel(['{"skill_name": "hang"}', ANSWER]), registry)
    try:
        ticket = agent.start("q", on_done=lambda state, error: done.append(state))
        _watch(ticket)
    finally:
        release.set()
    assert len(done) == 1
    assert types(done[0]) == ["CallSkillAction", "ToolErrorObservation", "FinalAnswerAction"]
    assert "timeout" in done[0].stream[1].error  # type: ignore[union-attr]


def test_start_ends_a_cancelled_run_from_the_checking_thread_while_a_skill_hangs() -> None:
    threading = __import__("threading")
    registry = Registry()
    release, entered, cancel = threading.Event(), threading.Event(), threading.Event()

    @registry.skill(timeout=None)
    def hang() -> str:
        """Never returns by itself."""
        entered.set()
        release.wait(10)
        return "late"

    done: list[tuple[AgentState, str]] = []
    agent = Agent(MockModel(['{"skill_name": "hang"}', ANSWER]), registry)
    try:
        ticket = agent.start(
            "q",
            should_stop=cancel.is_set,
            on_done=lambda state, error: done.append((state, threading.current_thread().name)),
        )
        assert entered.wait(10)
        ticket.check()  # nothing to do yet: no timeout, no cancel
        assert not done
        cancel.set()
        _watch(ticket)
    finally:
        release.set()
    assert len(done) == 1
    state, thread_name = done[0]
    assert state.stream[-1] == InterruptedObservation(reason="cancelled")
    assert thread_name == threading.current_thread().name


def test_start_hands_what_escaped_the_loop_to_on_done() -> None:
    def broken_listener(event: Any) -> None:
        raise LookupError("a bug in the caller's event hook")

    done: list[BaseException | None] = []
    ticket = Agent(MockModel([ANSWER]), Registry()).start(
        "q", on_event=broken_listener, on_done=lambda state, error: done.append(error)
    )
    _watch(ticket)
    assert len(done) == 1
    assert isinstance(done[0], LookupError)
    assert isinstance(ticket.error, LookupError)


def test_a_skill_that_hung_under_one_agent_is_not_started_again_by_another() -> None:
    threading = __import__("threading")
    registry = Registry()
    release = threading.Event()
    started: list[int] = []

    @registry.skill(timeout=0.2)
    def hang() -> str:
        """Never returns in time."""
        started.append(1)
        release.wait(10)
        return "late"

    calls = ['{"skill_name": "hang"}', ANSWER]
    try:
        first = Agent(MockModel(calls), registry).run("q")
        # A new agent on the same registry, as a script that builds one per question does.
        second = Agent(MockModel(calls), registry).run("q")
    finally:
        release.set()
    assert "timeout" in first.stream[1].error  # type: ignore[union-attr]
    assert "still running" in second.stream[1].error  # type: ignore[union-attr]
    assert len(started) == 1  # one stuck thread, not one per agent


def test_start_ends_the_run_with_the_error_when_the_hand_over_breaks() -> None:
    threading = __import__("threading")
    registry = Registry()
    release = threading.Event()

    @registry.skill(timeout=0.2)
    def hang() -> str:
        """Never returns in time."""
        release.wait(10)
        return "late"

    def listener(event: Any) -> None:
        if isinstance(event, ToolErrorObservation):
            raise LookupError("the event hook broke during the hand-over")

    done: list[BaseException | None] = []
    agent = Agent(MockModel(['{"skill_name": "hang"}', ANSWER]), registry)
    try:
        ticket = agent.start(
            "q", on_event=listener, on_done=lambda state, error: done.append(error)
        )
        _watch(ticket)  # check() itself never raises
    finally:
        release.set()
    assert len(done) == 1
    assert isinstance(done[0], LookupError)


def test_a_completion_callback_that_raises_does_not_cost_the_next_run_its_thread() -> None:
    registry = Registry()
    agent = Agent(MockModel([ANSWER, ANSWER]), registry)

    def exits(state: AgentState, error: BaseException | None) -> None:
        raise SystemExit("a callback that exits")

    first = agent.start("q", on_done=exits)
    _watch(first)
    answers: list[str | None] = []
    second = agent.start("q", on_done=lambda state, error: answers.append(state.final_answer))
    _watch(second)
    assert answers == ["I cannot tell how hot it is."]
