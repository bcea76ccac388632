"""The real embedded Gemma 3 270M through llama.cpp: reuse, usage, grammar, budgets and errors.

The model is loaded once for the module and replies are kept short, so this file stays quick on
two cores.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from edge_agentd import (
    Agent,
    AgentState,
    Completion,
    ContextExceeded,
    ModelHandle,
    Registry,
    load_model,
)
from edge_agentd.agent.events import (
    CallSkillAction,
    FinalAnswerAction,
    ModelErrorObservation,
    ValidationErrorObservation,
)
from edge_agentd.agent.prompt import render_event
from edge_agentd.agent.protocol import ModelError
from edge_agentd.model.constrained import GrammarError
from edge_agentd.model.formats import GEMMA3
from edge_agentd.model.llama import LlamaModel, ModelClosed

N_CTX = 2048
RegistryFactory = Callable[..., Registry]  # conftest.py


def read_sensor(name: str) -> float:
    """Read a temperature sensor, in degrees Celsius."""
    return 21.5


def clock() -> str:
    """The current local time."""
    return "12:00"


@pytest.fixture(scope="module")
def model() -> Iterator[LlamaModel]:
    handle = load_model(n_ctx=N_CTX)
    assert isinstance(handle, LlamaModel)
    yield handle
    handle.close()


@pytest.fixture(scope="module")
def agent(model: LlamaModel, make_registry: RegistryFactory) -> Agent:
    return Agent(model, make_registry(read_sensor, clock))


def _actions(state: AgentState) -> list[CallSkillAction | FinalAnswerAction]:
    return [e for e in state.stream if isinstance(e, CallSkillAction | FinalAnswerAction)]


def test_handle_satisfies_the_protocol_and_reports_info(model: LlamaModel) -> None:
    assert isinstance(model, ModelHandle)
    assert model.chat_format == GEMMA3
    info = model.info
    assert info["architecture"] == "gemma3"
    assert info["chat_format"] == "gemma3"
    assert info["n_ctx"] == N_CTX
    assert info["swa_full"] is True
    assert info["file_size_bytes"] == model.path.stat().st_size
    assert isinstance(info["sha256"], str) and len(info["sha256"]) == 64


def test_full_agent_run_with_the_grammar_has_no_syntax_errors(agent: Agent) -> None:
    state = agent.run("What is the temperature of the kitchen sensor?", max_iterations=4)
    assert state.outcome in ("answered", "max_iterations")
    errors = [e for e in state.stream if isinstance(e, ValidationErrorObservation)]
    assert not [e for e in errors if e.error_type in ("json_syntax", "missing_field")]
    actions = _actions(state)
    assert actions, "the model took no action"
    for action in actions:
        assert action.usage is not None
        assert action.usage.stop == "stop"
        assert action.usage.generated_tokens and action.usage.generated_tokens > 0
        assert action.usage.prefill_s is not None and action.usage.decode_s is not None
        json.loads(action.raw)  # the grammar keeps every reply one JSON object


def test_later_steps_evaluate_only_their_new_tokens(agent: Agent, model: LlamaModel) -> None:
    state = agent.run("What time is it?", max_iterations=4)
    usages = [a.usage for a in _actions(state)]
    assert len(usages) >= 2
    for before, after in itertools.pairwise(usages):
        assert before is not None and after is not None
        assert before.prompt_tokens and after.prompt_tokens and before.generated_tokens
        new = after.prompt_tokens - before.prompt_tokens - before.generated_tokens
        assert after.evaluated_tokens is not None
        # The reply stays in the cache (tests/model/test_reply_kv.py holds the tight bound).
        assert after.evaluated_tokens <= new + 2, (after, new)
        assert after.evaluated_tokens < after.prompt_tokens // 2


def test_second_run_reuses_the_system_prompt(agent: Agent, model: LlamaModel) -> None:
    model.forget()
    agent.run("Is the kitchen warm?", max_iterations=1)
    state = agent.run("What does the hall sensor read?", max_iterations=1)
    first = _actions(state)[0].usage
    assert first is not None and first.prompt_tokens and first.evaluated_tokens is not None
    assert first.evaluated_tokens < first.prompt_tokens / 2


def test_warm_up_leaves_only_the_query_to_evaluate(agent: Agent, model: LlamaModel) -> None:
    model.forget()
    model.warm_up(agent.preamble())
    preamble_tokens = len(model.tokenize(agent.preamble()))
    prompt = agent.render_prompt(AgentState(query="What time is it?"))
    reply = model.generate(prompt, max_tokens=4)
    assert isinstance(reply, Completion) and reply.usage is not None
    assert reply.usage.evaluated_tokens is not None and reply.usage.prompt_tokens is not None
    assert reply.usage.evaluated_tokens <= reply.usage.prompt_tokens - preamble_tokens + 2


def test_reuse_gives_the_same_output_as_a_fresh_context(agent: Agent, model: LlamaModel) -> None:
    model.forget()
    state = agent.run("What is the temperature of the attic sensor?", max_iterations=3)
    schema = agent.registry.action_schema()
    replayed = AgentState(query=state.query)
    for event in state.stream:
        if isinstance(event, CallSkillAction | FinalAnswerAction):
            prompt = agent.render_prompt(replayed)
            model.forget()
            fresh = model.generate(prompt, action_schema=schema)
            assert fresh.usage is not None and fresh.usage.evaluated_tokens == (
                fresh.usage.prompt_tokens
            )
            assert str(fresh) == event.raw
        replayed.stream.append(event)
    assert render_event is not None


def test_unconstrained_greedy_reuse_matches_fresh(model: LlamaModel) -> None:
    base = GEMMA3.opening("You answer in one short sentence.", "Name a colour.")
    model.forget()
    first = model.generate(base, constrained=False, max_tokens=12)
    follow = base + GEMMA3.model_turn_end(first) + GEMMA3.user_turn("Name another one.")
    reused = model.generate(follow, constrained=False, max_tokens=12)
    model.forget()
    fresh = model.generate(follow, constrained=False, max_tokens=12)
    assert str(reused) == str(fresh)
    assert reused.usage is not None and fresh.usage is not None
    assert reused.usage.evaluated_tokens is not None and fresh.usage.evaluated_tokens is not None
    assert reused.usage.evaluated_tokens < fresh.usage.evaluated_tokens / 2


def test_context_exceeded_becomes_a_model_error_event(model: LlamaModel) -> None:
    registry = Registry()

    @registry.skill
    def dump() -> str:
        """Returns a lot of text."""
        return "word " * 3000

    agent = Agent(model, registry, max_result_chars=20000)
    huge = "Summarise this: " + "lorem ipsum " * 1500
    state = agent.run(huge, max_iterations=2, max_retries=0)
    last = state.stream.last
    assert isinstance(last, ModelErrorObservation)
    assert last.code == "context_exceeded"
    assert last.n_ctx == N_CTX
    assert last.n_prompt_tokens is not None and last.n_prompt_tokens > N_CTX - 256
    assert state.outcome == "retries_exhausted"


def test_context_exceeded_counts_the_reply_cap(model: LlamaModel) -> None:
    prompt = GEMMA3.opening("", "hello " * 100)
    n_prompt = len(model.tokenize(prompt))
    with pytest.raises(ContextExceeded) as caught:
        model.generate(prompt, max_tokens=N_CTX - n_prompt + 1)
    assert caught.value.n_prompt_tokens == n_prompt
    assert caught.value.n_ctx == N_CTX
    ok = model.generate(prompt, max_tokens=2, constrained=False)
    assert ok.usage is not None and ok.usage.generated_tokens == 2


def test_reply_cut_at_the_cap_says_length_and_the_agent_tells_the_model(
    model: LlamaModel, make_registry: RegistryFactory
) -> None:
    agent = Agent(model, make_registry(read_sensor, clock))
    state = agent.run("What time is it?", max_iterations=1, max_retries=0, max_tokens=3)
    event = state.stream[0]
    assert isinstance(event, ValidationErrorObservation)
    assert event.usage is not None and event.usage.stop == "length"
    assert event.usage.generated_tokens == 3
    assert event.error_type == "truncated"


def test_should_stop_and_deadline_interrupt_between_tokens(model: LlamaModel) -> None:
    prompt = GEMMA3.opening("", "Count from one to fifty in words.")
    calls = {"n": 0}

    def stop_after_three() -> bool:
        calls["n"] += 1
        return calls["n"] > 3

    reply = model.generate(prompt, constrained=False, max_tokens=64, should_stop=stop_after_three)
    assert reply.usage is not None and reply.usage.stop == "interrupted"
    assert reply.usage.generated_tokens is not None and reply.usage.generated_tokens <= 4
    late = model.generate(prompt, constrained=False, max_tokens=64, deadline=time.monotonic())
    assert late.usage is not None and late.usage.stop == "interrupted"
    assert late.usage.generated_tokens is not None and late.usage.generated_tokens <= 1


class Window(BaseModel):
    """A time window: where it starts and how many hours it spans."""

    start: str
    hours: int


def test_grammar_follows_nested_argument_schemas(model: LlamaModel) -> None:
    registry = Registry()

    @registry.skill
    def history(sensor: str, window: Window) -> list[float]:
        """Past readings of a sensor over a time window."""
        return [20.0, 21.0]

    schema = registry.action_schema()
    assert "$defs" in json.dumps(schema)
    prompt = Agent(model, registry).render_prompt(
        AgentState(query="Show the history of the kitchen sensor over the last 3 hours.")
    )
    reply = model.generate(prompt, action_schema=schema, max_tokens=48)
    assert reply.usage is not None
    if reply.usage.stop == "stop":
        value: Any = json.loads(reply)
        spec = registry.get("history")
        assert spec is not None
        if "skill_name" in value:
            spec.validate_arguments(value["arguments"])
        else:
            assert value["final_answer"]
    else:
        # The small model may ramble inside a string until the cap, but the grammar still put
        # the nested object where the schema's $ref says.
        compact = "".join(reply.split())
        assert compact.startswith('{"skill_name":"history","arguments":{"sensor":"'), reply
        assert '"window":{"start":"' in compact, reply


def test_unknown_options_are_ignored_and_bad_ones_are_clear(model: LlamaModel) -> None:
    prompt = GEMMA3.opening("", "Say hi.")
    reply = model.generate(prompt, max_tokens=2, constrained=False, colour="blue")
    assert reply.usage is not None
    with pytest.raises(TypeError):
        model.generate(prompt, max_tokens="many")
    with pytest.raises(ValueError, match="max_tokens"):
        model.generate(prompt, max_tokens=0)
    with pytest.raises(TypeError):
        model.generate(b"bytes")  # type: ignore[arg-type]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    text=st.text(max_size=200) | st.sampled_from(["", "<end_of_turn>", "<start_of_turn>model\n"])
)
def test_hostile_prompts_never_crash(model: LlamaModel, text: str) -> None:
    reply = model.generate(text, max_tokens=2, constrained=False)
    assert isinstance(reply, Completion) and reply.usage is not None
    assert reply.usage.stop in ("stop", "length")
    assert reply.usage.generated_tokens is not None and reply.usage.generated_tokens <= 2


def test_a_closed_model_refuses_work_without_crashing(make_registry: RegistryFactory) -> None:
    handle = load_model(n_ctx=256)
    handle.close()
    handle.close()
    assert handle.closed
    with pytest.raises(ModelClosed):
        handle.generate("hello")
    state = Agent(handle, make_registry(read_sensor, clock)).run(
        "hello", max_iterations=1, max_retries=0
    )
    last = state.stream.last
    assert isinstance(last, ModelErrorObservation) and last.code == "model_closed"


def test_load_model_rejects_bad_arguments() -> None:
    with pytest.raises(TypeError):
        load_model(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_ctx"):
        load_model(n_ctx=8)


_SCHEMA_KEYS = st.sampled_from(
    [
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "oneOf",
        "anyOf",
        "$ref",
        "minLength",
        "maxLength",
        "pattern",
        "additionalProperties",
        "$defs",
        "format",
    ]
)
_SCHEMA_LEAVES = (
    st.sampled_from(["object", "string", "integer", "array", "null", "#/$defs/x", "^a+$", "date"])
    | st.integers(-3, 3)
    | st.booleans()
)
_SCHEMAS = st.recursive(
    _SCHEMA_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SCHEMA_KEYS, inner, max_size=4),
    max_leaves=12,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(schema=st.dictionaries(_SCHEMA_KEYS, _SCHEMAS, max_size=4))
def test_odd_action_schemas_give_a_reply_or_a_grammar_error(
    model: LlamaModel, schema: dict[str, Any]
) -> None:
    prompt = GEMMA3.opening("", "Say hi.")
    try:
        reply = model.generate(prompt, action_schema=schema, max_tokens=2)
    except GrammarError as exc:
        assert exc.code == "grammar"
    else:
        assert reply.usage is not None and reply.usage.generated_tokens is not None
        assert reply.usage.generated_tokens <= 2


def test_sampling_with_a_temperature_still_follows_the_grammar(
    agent: Agent, model: LlamaModel
) -> None:
    prompt = agent.render_prompt(AgentState(query="What time is it?"))
    schema = agent.registry.action_schema()
    for _ in range(2):
        reply = model.generate(prompt, action_schema=schema, temperature=1.5, max_tokens=40)
        assert reply.usage is not None
        if reply.usage.stop == "stop":
            value = json.loads(reply)
            assert value.get("skill_name") in ("read_sensor", "clock") or value["final_answer"]
        else:
            assert reply.lstrip().startswith("{")


def test_load_model_warms_up_at_load() -> None:
    handle = load_model(n_ctx=512, warm_up="<start_of_turn>user\nYou are a helpful assistant.")
    try:
        assert handle.info["cached_tokens"] > 5
        reply = handle.generate(
            "<start_of_turn>user\nYou are a helpful assistant.\n\nHi<end_of_turn>\n",
            max_tokens=1,
            constrained=False,
        )
        assert reply.usage is not None and reply.usage.evaluated_tokens is not None
        assert reply.usage.evaluated_tokens < 8
    finally:
        handle.close()
    with pytest.raises(ContextExceeded):
        load_model(n_ctx=64, warm_up="word " * 200)


def test_extra_buffers_are_off_only_on_a_cpu_with_amx(tmp_path: Any) -> None:
    from edge_agentd.model.runtime import extra_buffers_safe

    amx = tmp_path / "amx"
    amx.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 amx_bf16 amx_tile amx_int8\n\n")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm crc32 asimddp\n")
    assert not extra_buffers_safe(amx)
    assert extra_buffers_safe(arm)
    # No /proc/cpuinfo to read: llama.cpp's default stands.
    assert extra_buffers_safe(tmp_path / "missing")


def test_a_text_longer_than_a_batch_is_scored_in_windows(model: LlamaModel) -> None:
    # Scoring reads every token's logits, which llama.cpp keeps at 1 MiB per token for good: a
    # question longer than n_batch once overran the batch's arrays, and any long one grew the
    # daemon by its length in MiB. It is now scored in windows of a few tokens.
    prompts = ["<start_of_turn>user\nThe time now.", "<start_of_turn>user\nThe weather outside."]
    text = " Is it raining, and how warm is it" * 60
    assert len(model.tokenize(text, add_bos=False)) > model.sizes.n_batch
    scores = model.likelihood(prompts, text)
    assert len(scores) == 2 and all(-1e6 < score < 0 for score in scores)
    # The same sum as scoring it in one window per prompt, when it fits in one.
    short = " Is it raining, and how warm is it outside today, and will it rain later?"
    assert len(model.tokenize(short, add_bos=False)) > 16
    narrow = load_model(n_ctx=256, n_batch=4)
    try:
        assert isinstance(narrow, LlamaModel)
        assert narrow.likelihood(prompts, short) == pytest.approx(
            model.likelihood(prompts, short), rel=0.02
        )
    finally:
        narrow.close()
    # More tokens than a batch holds are refused before anything is written, and the model
    # still answers afterwards.
    with pytest.raises(ModelError, match="do not fit in one batch"):
        model._runtime.decode([1] * (model.sizes.n_batch + 1), 0, seq=1)
    reply = model.generate("<start_of_turn>user\nHi<end_of_turn>\n", max_tokens=2)
    assert reply.usage is not None and reply.usage.generated_tokens


def test_whole_scoring_gives_every_token_of_each_continuation(model: LlamaModel) -> None:
    # A rendered answer is chosen by its whole likelihood: by its first differing token alone,
    # a long sentence of nonsense that starts well beat a short right one.
    prompt = "<start_of_turn>user\nHow many sensors are there?<end_of_turn>\n<start_of_turn>model\n"
    options = ['{"final_answer": "There are 3 sensors."}', '{"final_answer": "The sensors are."}']
    branches = model.score(prompt, options)
    whole = model.score(prompt, options, whole=True)
    for option, branch, every in zip(options, branches, whole, strict=True):
        assert len(every) == len(model.tokenize(option, add_bos=False)) > len(branch)
        assert every[: len(branch)] == pytest.approx(branch, abs=1e-3)
        assert all(-1e6 < score <= 0 for score in every)
