"""Forced runs: text the action grammar allows alone is taken without sampling, in one batch.

The canonical grammar is checked on its own (no model); the rest runs the embedded Gemma 3 270M,
with short replies, and asserts counts and texts, never timings.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd import Agent, AgentState, Registry, load_model
from edge_agentd.agent.events import CallSkillAction, FinalAnswerAction
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.parsing import parse_action
from edge_agentd.model.constrained import canonical_gbnf, lex_gbnf, schema_to_gbnf
from edge_agentd.model.decoding import Decoder
from edge_agentd.model.llama import LlamaModel

# The decoder that counts what it sampled and forced, and decodes without forced runs on request,
# is the benchmarks' (scripts/bench/decoders.py): the package carries no such switch.
from scripts.bench.decoders import MeasuredDecoder, decoding, measure

N_CTX = 1024


def _registry() -> Registry:
    registry = Registry()

    @registry.skill
    def read_sensor(name: str) -> float:
        """Read a temperature sensor, in degrees Celsius."""
        return 21.5

    @registry.skill
    def read_humidity(room: str) -> float:
        """Relative humidity of a room, in percent."""
        return 48.0

    @registry.skill
    def clock() -> str:
        """The current local time."""
        return "12:00"

    return registry


@pytest.fixture(scope="module")
def model() -> Iterator[LlamaModel]:
    handle = load_model(n_ctx=N_CTX)
    assert isinstance(handle, LlamaModel)
    measure(handle)
    yield handle
    handle.close()


@pytest.fixture(scope="module")
def agent(model: LlamaModel) -> Agent:
    return Agent(model, _registry(), grounding=Grounding())


def _decoder(model: LlamaModel) -> MeasuredDecoder:
    assert isinstance(model.decoder, MeasuredDecoder)
    return model.decoder


# -- the canonical grammar, without a model ---------------------------------------------------


def test_the_action_grammar_has_no_optional_whitespace() -> None:
    gbnf = schema_to_gbnf(_registry().action_schema())
    assert '" "?' not in gbnf
    assert 'space ::= ""' in gbnf
    assert '": "' in gbnf and '", "' in gbnf
    assert '"," space' not in gbnf and '":" space' not in gbnf


@given(st.text(alphabet='ab"\\[]:, -_|()*+?\n', max_size=60))
@settings(max_examples=200, deadline=None)
def test_lexing_a_grammar_gives_its_text_back(text: str) -> None:
    assert "".join(lex_gbnf(text)) == text


def test_separators_inside_literals_are_left_alone() -> None:
    text = 'a ::= "\\",\\"" space "," space b\nspace ::= " "?\n'
    assert canonical_gbnf(text) == 'a ::= "\\",\\"" space ", " b\nspace ::= ""\n'


# -- the real model ---------------------------------------------------------------------------


QUERIES = ["What time is it?", "What is the temperature of the kitchen sensor?", "Say hello."]


@pytest.mark.parametrize("query", QUERIES)
def test_actions_are_canonical_json_and_mostly_forced(
    model: LlamaModel, agent: Agent, query: str
) -> None:
    schema = agent.registry.action_schema()
    reply = model.generate(
        agent.render_prompt(AgentState(query=query)), action_schema=schema, max_tokens=64
    )
    stats = _decoder(model).last
    assert stats is not None
    assert reply.usage is not None
    if reply.usage.stop == "length":
        pytest.skip("the small model ran on to the cap; nothing to check about its end")
    value = json.loads(reply)
    assert json.dumps(value) == reply  # exactly json.dumps's spelling
    action = parse_action(reply, agent.registry.names(), reply.usage)
    assert isinstance(action, CallSkillAction | FinalAnswerAction)
    # The keys, the quotes and the separators are never sampled.
    assert stats.lead >= 1  # at least '{"'
    assert stats.forced + stats.lead >= 5
    assert stats.sampled + stats.forced == reply.usage.generated_tokens


def test_forced_runs_cost_fewer_samples_than_token_by_token(
    model: LlamaModel, agent: Agent
) -> None:
    schema = agent.registry.action_schema()
    prompt = agent.render_prompt(AgentState(query="What time is it?"))
    forced = model.generate(prompt, action_schema=schema, max_tokens=64)
    forced_stats = _decoder(model).last
    forced_steps = forced_stats.sampled if forced_stats else -1
    with decoding(model, forced_runs=False) as decoder:
        single = model.generate(prompt, action_schema=schema, max_tokens=64)
    single_steps = decoder.last.sampled if decoder.last else -1
    assert json.loads(single) is not None and json.loads(forced) is not None
    assert 0 < forced_steps <= single_steps / 2


def test_the_measured_decoder_decodes_what_the_daemons_does(
    model: LlamaModel, agent: Agent
) -> None:
    """The benchmarks' decoder, switches left as they are, is the daemon's: same text, same
    token counts (what they measure is the daemon's path)."""
    schema = agent.registry.action_schema()
    prompt = agent.render_prompt(AgentState(query="What time is it?"))
    measured = _decoder(model)
    parts = {field.name: getattr(measured, field.name) for field in dataclasses.fields(Decoder)}
    model.decoder = Decoder(**parts)
    try:
        daemons = model.generate(prompt, action_schema=schema, max_tokens=64)
    finally:
        model.decoder = measured
    again = model.generate(prompt, action_schema=schema, max_tokens=64)
    assert again == daemons
    assert again.usage is not None and daemons.usage is not None
    assert again.usage.generated_tokens == daemons.usage.generated_tokens
    assert again.usage.prompt_tokens == daemons.usage.prompt_tokens


def test_a_prefix_is_followed_by_forced_text(model: LlamaModel, agent: Agent) -> None:
    schema = agent.registry.action_schema()
    prompt = agent.render_prompt(AgentState(query="What time is it?"))
    reply = model.generate(prompt, action_schema=schema, prefix='{"skill_name": "cl', max_tokens=32)
    assert reply == '{"skill_name": "clock", "arguments": {}}'
    stats = _decoder(model).last
    assert stats is not None
    # "ock", the rest of the action and its end are all forced: nothing is sampled.
    assert stats.sampled == 0
    assert reply.usage is not None and reply.usage.stop == "stop"


def test_the_token_cap_holds_across_a_forced_run(model: LlamaModel, agent: Agent) -> None:
    schema = agent.registry.action_schema()
    prompt = agent.render_prompt(AgentState(query="What time is it?"))
    for cap in (1, 2, 3, 5):
        reply = model.generate(prompt, action_schema=schema, max_tokens=cap)
        assert reply.usage is not None
        stats = _decoder(model).last
        assert stats is not None
        assert (reply.usage.generated_tokens or 0) <= cap  # the lead counts as the prompt
        assert reply.usage.stop in ("length", "stop")


@pytest.mark.parametrize(
    "values",
    [
        ["température", "temps"],  # forced through a two-byte character
        ["é1", "è2"],  # the two share the first byte of their first character only
        ["日本", "日曜"],  # a three-byte character forced whole
    ],
)
def test_forced_text_through_multibyte_characters(model: LlamaModel, values: list[str]) -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"word": {"enum": values}},
        "required": ["word"],
        "additionalProperties": False,
    }
    fmt = model.chat_format
    prompt = f"{fmt.user_prefix}Pick a word.{fmt.user_suffix}{fmt.model_prefix}"
    reply = model.generate(prompt, action_schema=schema, max_tokens=32)
    assert json.loads(reply)["word"] in values
    with decoding(model, forced_runs=False):
        forced_again = model.generate(prompt, action_schema=schema, max_tokens=32)
    assert json.loads(forced_again)["word"] in values
