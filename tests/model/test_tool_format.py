"""A model's own tool-call format (docs/design.md, "Tool formats"): Qwen2.5's ``<tools>``,
``<tool_call>`` and ``<tool_response>``, read off its real chat template, spoken in the prompt,
held by the grammar and parsed into the same events the seed's JSON actions give, with the same
validator names and error types. Run for real on a tiny random-weight ``qwen2`` GGUF carrying
Qwen2.5's template (tests/tiny_gguf.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jinja2
import pytest
from daemon_harness import start_daemon, stop_daemon, wait_ready
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tiny_gguf import QWEN25_TEMPLATE, build_qwen2_gguf

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.actions import HERMES, tagged_calls_of
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.events import (
    CallSkillAction,
    FinalAnswerAction,
    SkillResultObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from edge_agentd.agent.evidence import asked_text_pattern
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.parsing import parse_action
from edge_agentd.agent.prompt import render_event, render_system
from edge_agentd.agent.workflow import Soul
from edge_agentd.client.askoptions import AskOptions
from edge_agentd.client.zmqclient import Client
from edge_agentd.guidance.answering import Answering
from edge_agentd.model.constrained import GrammarError
from edge_agentd.model.formats import format_from_template
from edge_agentd.model.loading import load_model
from edge_agentd.model.toolgrammar import tagged_gbnf

SKILLS = ("clock", "read_sensor")


@pytest.fixture(scope="module")
def qwen2_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_qwen2_gguf(tmp_path_factory.mktemp("qwen2") / "tiny-qwen2.gguf")


def _registry() -> Registry:
    registry = Registry()

    @registry.skill
    def clock() -> str:
        """The current local time."""
        return "12:00"

    @registry.skill(choices=lambda: {"name": ["bme280", "thermal_zone0"]})
    def read_sensor(name: str) -> dict[str, Any]:
        """Current value of one sensor."""
        return {"sensor": name, "quantity": "temperature", "value": 21.5, "unit": "°C"}

    return registry


def _template_render(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined)
    environment.policies["json.dumps_kwargs"] = {"ensure_ascii": False}
    return environment.from_string(QWEN25_TEMPLATE).render(
        messages=messages, tools=tools, add_generation_prompt=False
    )


def test_the_qwen25_template_is_read_as_its_tool_format() -> None:
    assert tagged_calls_of(QWEN25_TEMPLATE) is HERMES
    # A template with turns but no tool blocks is spoken to in JSON actions.
    assert tagged_calls_of("{{ messages[0].content }}") is None


def test_the_texts_are_the_templates_own() -> None:
    """The catalogue's frame, a call and a result, as the real template writes them."""
    tool = {"type": "function", "function": {"name": "clock", "parameters": {}}}
    rendered = _template_render(
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "Q"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "clock", "arguments": {"a": 1}}}],
            },
            {"role": "tool", "content": "R"},
        ],
        [tool],
    )
    assert HERMES.catalogue_open + "\n" in rendered
    assert HERMES.catalogue_close + "<|im_end|>" in rendered
    assert HERMES.call_text("clock", {"a": 1}) + "<|im_end|>" in rendered
    assert "<|im_start|>user\n" + HERMES.result_text("R") + "<|im_end|>" in rendered


def test_the_prompt_speaks_it() -> None:
    registry = _registry()
    skills = registry.select(None)
    choices = dict(registry.choices(None))
    system = render_system(Soul(), None, skills, choices=choices, calls=HERMES)
    assert "<tools>" in system and '"enum": ["bme280", "thermal_zone0"]' in system
    assert '{"skill_name"' not in system  # not the JSON action language
    fmt = format_from_template(QWEN25_TEMPLATE, name="qwen2")
    fmt = type(fmt)(**{**{f: getattr(fmt, f) for f in fmt.__dataclass_fields__}, "calls": HERMES})
    result = SkillResultObservation(skill_name="clock", result="12:00", call_id="call_1")
    assert render_event(result, fmt) == (
        "<|im_start|>user\n<tool_response>\n12:00\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    error = ToolErrorObservation(skill_name="clock", error="boom", available_skills=["clock"])
    assert "<tool_response>\nError from clock: boom\n</tool_response>" in render_event(error, fmt)


@pytest.mark.parametrize(
    ("raw", "validator", "error_type"),
    [
        ("<tool_call>\n{not json}\n</tool_call>", "action_parse", "json_syntax"),
        ('<tool_call>\n{"name": "clock"', "action_parse", "json_syntax"),
        ('<tool_call>\n{"arguments": {}}\n</tool_call>', "action_parse", "missing_field"),
        ('<tool_call>\n["clock"]\n</tool_call>', "action_parse", "missing_field"),
        (
            '<tool_call>\n{"name": "oven", "arguments": {}}\n</tool_call>',
            "action_parse",
            "unknown_skill",
        ),
        (
            '<tool_call>\n{"name": "clock", "arguments": []}\n</tool_call>',
            "action_parse",
            "invalid_field",
        ),
        ("   \n ", "non_empty_final_answer", None),
    ],
)
def test_each_fault_is_the_seeds(raw: str, validator: str, error_type: str | None) -> None:
    parsed = HERMES.parse(raw, SKILLS)
    assert isinstance(parsed, ValidationErrorObservation)
    assert (parsed.validator_name, parsed.error_type) == (validator, error_type)
    assert parsed.raw == raw


def test_a_call_and_an_answer_are_the_same_events_as_json() -> None:
    call = HERMES.parse(HERMES.call_text("read_sensor", {"name": "bme280"}), SKILLS, call_id="c1")
    same = parse_action(
        '{"skill_name": "read_sensor", "arguments": {"name": "bme280"}}', SKILLS, call_id="c1"
    )
    assert isinstance(call, CallSkillAction) and isinstance(same, CallSkillAction)
    assert (call.skill_name, call.arguments, call.call_id) == (
        same.skill_name,
        same.arguments,
        "c1",
    )
    assert call.raw.startswith("<tool_call>")
    answer = HERMES.parse("It is 12:00.\n", SKILLS)
    assert isinstance(answer, FinalAnswerAction) and answer.answer == "It is 12:00."


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.text().map(lambda t: "<tool_call>\n" + t)))
def test_any_reply_is_one_event(raw: str) -> None:
    parsed = HERMES.parse(raw, SKILLS)
    assert isinstance(parsed, CallSkillAction | FinalAnswerAction | ValidationErrorObservation)
    assert parsed.raw == raw


def test_the_grammar_holds_calls_between_tags_and_a_grounded_answer() -> None:
    registry = _registry()
    schema = registry.action_schema(None, registry.choices(None))
    gbnf = tagged_gbnf(HERMES, schema)
    assert gbnf.startswith('root ::= "<tool_call>\\n" call-root "\\n</tool_call>" | text-answer')
    held = {**schema, "oneOf": [*schema["oneOf"][:-1], {
        "type": "object", "properties": {"final_answer": {"enum": ["It is 12:00."]}},
        "required": ["final_answer"], "additionalProperties": False}]}  # fmt: skip
    assert 'text-answer ::= "It is 12:00."' in tagged_gbnf(HERMES, held)
    with pytest.raises(GrammarError):
        tagged_gbnf(HERMES, {"oneOf": []})


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=120))
@example('Don\'t [tell] me\\ the ^date-of "4/7"?')
def test_any_question_s_free_text_pattern_is_a_grammar(question: str) -> None:
    """Hostile questions: the pattern of any text compiles into the tool grammar, and the
    question's own words, each alone, match it."""
    pattern = asked_text_pattern(question)
    schema = {"oneOf": [{"type": "object", "properties": {
        "skill_name": {"const": "find_date"},
        "arguments": {"type": "object", "properties": {"text": {"type": "string",
                                                                 "pattern": pattern}},
                      "required": ["text"], "additionalProperties": False}},
        "required": ["skill_name", "arguments"], "additionalProperties": False}]}  # fmt: skip
    assert "call-root" in tagged_gbnf(HERMES, schema)
    asked = re.compile(pattern)
    for word in ENGLISH.word.findall(question):
        assert asked.fullmatch(word), (word, pattern)


def test_a_free_text_argument_is_held_to_the_question_s_words(qwen2_gguf: Path) -> None:
    """Random weights under the tool grammar: a call's free text may say only the question's
    own words and marks ("next Wednesday"), never another day ("next friday")."""
    registry = Registry()

    @registry.skill
    def find_date(text: str) -> dict[str, Any]:
        """The date a phrase such as 'next friday' names."""
        return {"asked": text}

    question = "What is the date of next Wednesday?"
    asked = re.compile(asked_text_pattern(question))
    # The action schema grounding hands the decoder holds the text to the question's words.
    scripted = MockModel([json.dumps({"skill_name": "find_date", "arguments": {"text": "x"}})],
                         uses_action_schema=True)  # fmt: skip
    Agent(scripted, registry, grounding=Grounding()).run(question, max_iterations=1)
    schema = scripted.calls[0]["action_schema"]
    [branch] = [b for b in schema["oneOf"] if "skill_name" in b["properties"]]
    text = branch["properties"]["arguments"]["properties"]["text"]
    assert text["pattern"] == asked.pattern
    assert asked.fullmatch("next Wednesday") and not asked.fullmatch("next friday")
    assert "call-root" in tagged_gbnf(HERMES, schema)
    model = load_model(qwen2_gguf, n_ctx=2048, max_tokens=60, tool_calls=True)
    try:
        agent = Agent(model, registry, guidance=Answering(), grounding=Grounding())
        state = agent.run(question, max_iterations=3)
    finally:
        model.close()
    calls = [e for e in state.stream if isinstance(e, CallSkillAction)]
    assert calls, list(state.stream)
    for call in calls:
        assert asked.fullmatch(call.arguments["text"]), call.arguments


def test_llama_cpp_speaks_it_on_the_tiny_qwen2(qwen2_gguf: Path) -> None:
    """Random weights under the tool grammar: every reply is a tagged call or a plain answer,
    each parsed as such; the first, held to a call by grounding, is a call."""
    model = load_model(qwen2_gguf, n_ctx=2048, max_tokens=200, tool_calls=True)
    try:
        assert model.chat_format.calls is HERMES
        agent = Agent(model, _registry(), guidance=Answering(), grounding=Grounding())
        assert "<tools>" in agent.preamble()
        state = agent.run("What is the temperature of bme280?", max_iterations=3)
        events = list(state.stream)
        assert isinstance(events[0], CallSkillAction), events[0]
        assert events[0].raw.startswith("<tool_call>\n")
        # What the grammar allows alone (the tags, the keys, the rest of a name) is not sampled:
        # a byte-level BPE vocabulary has a token for each byte, read off its pieces.
        usage = events[0].usage
        assert usage is not None and usage.forced_tokens and usage.sampled_tokens is not None
        assert usage.sampled_tokens < usage.forced_tokens
        # The grammar keeps every reply a tagged call or plain text; only the token cap may cut
        # one (random weights can write an answer's free text until it).
        assert not [
            e
            for e in events
            if isinstance(e, ValidationErrorObservation)
            and e.validator_name == "action_parse"
            and e.error_type != "truncated"
        ], events
    finally:
        model.close()
    plain = load_model(qwen2_gguf, n_ctx=2048, max_tokens=8)
    try:
        assert plain.chat_format.calls is None  # the seed's JSON actions unless asked
    finally:
        plain.close()


def test_the_daemon_speaks_it_to_a_model_that_drives(qwen2_gguf: Path, tmp_path: Path) -> None:
    config = tmp_path / "edge-agent.toml"
    config.write_text('[model]\nn_ctx = 4096\nstrategy = "plain"\n[skills]\nweather = false\n')
    endpoint = f"ipc://{tmp_path}/daemon.sock"
    process = start_daemon(
        ["--model", str(qwen2_gguf), "--config", str(config), "--endpoint", endpoint],
        env={"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path)},
    )
    try:
        wait_ready(endpoint, process, timeout=120)
        client = Client(endpoint, timeout=120.0, retries=0)
        try:
            reply = client.run("What time is it?", AskOptions(max_iterations=2))
        finally:
            client.close()
    finally:
        stop_daemon(process)
    calls = [e for e in reply["state"]["events"] if e["type"] == "CallSkillAction"]
    assert calls and all(e["raw"].startswith("<tool_call>\n") for e in calls), reply
    assert json.loads(calls[0]["raw"].split("\n")[1])["name"] == calls[0]["skill_name"]
