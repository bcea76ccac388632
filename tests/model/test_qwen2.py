"""A user's own GGUF whose template adds a default system turn: Qwen2.5, run for real on a tiny
random-weight ``qwen2`` GGUF carrying Qwen2.5's real chat template (tests/tiny_gguf.py).

Qwen2.5's template writes "<|im_start|>system\\nYou are Qwen, ...<|im_end|>\\n" before the first
user turn when no system message is given, so that turn opens with more than the second. The
template reader once refused it ("the second user turn does not open like the first"), and the
daemon would not load the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemon_harness import start_daemon, stop_daemon, wait_ready
from tiny_gguf import QWEN25_TEMPLATE, build_qwen2_gguf

from edge_agentd import Agent, Registry
from edge_agentd.agent.events import CallSkillAction, FinalAnswerAction
from edge_agentd.agent.grounding import Grounding
from edge_agentd.client.askoptions import AskOptions
from edge_agentd.client.zmqclient import Client
from edge_agentd.model.formats import TemplateUnusable, format_from_template
from edge_agentd.model.llama import LlamaModel

CHATML = {
    "system_prefix": "<|im_start|>system\n",
    "system_suffix": "<|im_end|>\n",
    "user_prefix": "<|im_start|>user\n",
    "user_suffix": "<|im_end|>\n",
    "model_prefix": "<|im_start|>assistant\n",
    "model_suffix": "<|im_end|>\n",
}


@pytest.fixture(scope="module")
def qwen2_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_qwen2_gguf(tmp_path_factory.mktemp("qwen2") / "tiny-qwen2.gguf")


def test_the_qwen25_template_gives_chatml_markers() -> None:
    fmt = format_from_template(
        QWEN25_TEMPLATE, name="qwen2", bos_token="<|endoftext|>", eos_token="<|im_end|>"
    )
    for field, text in CHATML.items():
        assert getattr(fmt, field) == text, field
    assert fmt.stop == ("<|im_end|>",)
    # Our prompts always carry a system turn, so the template's default one is never written.
    opening = fmt.opening("S", "Q")
    assert opening == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
    )
    assert "You are Qwen" not in opening


def test_a_default_turn_no_system_message_replaces_is_refused() -> None:
    """Text a template writes before the first user turn that a system message does not
    replace would be missing from every prompt: refused, as before, with a reason."""
    template = (
        "{{ 'Hello.\\n' }}{% for m in messages %}"
        "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    with pytest.raises(TemplateUnusable, match="before the first user turn"):
        format_from_template(template, name="x")


def _registry() -> Registry:
    registry = Registry()

    @registry.skill
    def clock() -> str:
        """The current local time."""
        return "12:00"

    return registry


def test_llama_cpp_runs_the_loop_on_it(qwen2_gguf: Path) -> None:
    model = LlamaModel(qwen2_gguf, n_ctx=2048, max_tokens=24)
    try:
        assert model.info["architecture"] == "qwen2"
        assert model.chat_format.name == "qwen2-template"  # its own template, read and used
        for field, text in CHATML.items():
            assert getattr(model.chat_format, field) == text, field
        agent = Agent(model, _registry(), grounding=Grounding())
        assert agent.preamble().startswith("<|im_start|>system\n")
        state = agent.run("What time is it?", max_iterations=2)
        actions = [e for e in state.stream if isinstance(e, CallSkillAction | FinalAnswerAction)]
        for action in actions:
            json.loads(action.raw)  # the grammar keeps random weights to valid actions
        assert state.outcome in ("answered", "max_iterations", "retries_exhausted")
    finally:
        model.close()


def test_the_daemon_serves_it(qwen2_gguf: Path, tmp_path: Path) -> None:
    config = tmp_path / "edge-agent.toml"
    config.write_text("[model]\nn_ctx = 4096\n[skills]\nweather = false\n")
    endpoint = f"ipc://{tmp_path}/daemon.sock"
    process = start_daemon(
        ["--model", str(qwen2_gguf), "--config", str(config), "--endpoint", endpoint],
        env={"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path)},
    )
    try:
        wait_ready(endpoint, process, timeout=120)
        client = Client(endpoint, timeout=120.0, retries=0)
        try:
            status = client.status()
            reply = client.run("What time is it?", AskOptions(max_iterations=2))
        finally:
            client.close()
    finally:
        stop_daemon(process)
    assert status["model"]["architecture"] == "qwen2", status
    # Random weights answer noise; what matters is that the daemon ran the loop on the file.
    assert reply["outcome"] in ("answered", "max_iterations", "retries_exhausted"), reply
