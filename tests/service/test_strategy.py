"""``[model] strategy``: the daemon guides a small model and leaves a large one alone."""

from __future__ import annotations

from typing import Any

import pytest

from edge_agentd import MockModel, Registry
from edge_agentd.client.askoptions import AskOptions
from edge_agentd.client.zmqclient import Client
from edge_agentd.guidance.answering import Answering
from edge_agentd.guidance.guidance import ANSWER_HEAD, Guidance
from edge_agentd.service.config.settings import ConfigError, parse_settings
from edge_agentd.service.config.strategy import SMALL_MODEL_BYTES, guidance_for


class SizedModel(MockModel):
    """A scripted model that reports a model file of a given size, as a GGUF handle does."""

    def __init__(self, size: int | None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.size = size

    @property
    def info(self) -> dict[str, Any]:
        return {**super().info, "kind": "llama", "file_size_bytes": self.size}


@pytest.mark.parametrize(
    ("strategy", "size", "guided"),
    [
        ("guided", None, True),
        ("plain", 100, False),
        ("auto", 241 * 2**20, True),  # Gemma 3 270M Q4_K_M
        ("auto", 3 * 2**30, False),  # Gemma 4 E2B Q4_K_M: never worse than unhelped
        ("auto", None, False),  # a model that does not say how big it is
        ("auto", SMALL_MODEL_BYTES, False),
    ],
)
def test_each_strategy_picks_its_guidance(strategy: Any, size: int | None, guided: bool) -> None:
    guide = guidance_for(strategy, SizedModel(size, []))
    assert isinstance(guide, Guidance) is guided
    # A model that drives the loop gets the engine's answers (its own words only when asked).
    assert isinstance(guide, Answering) is not guided
    if not guided:
        assert isinstance(guide, Answering) and not guide.own_words
        own = guidance_for(strategy, SizedModel(size, []), "model")
        assert isinstance(own, Answering) and own.own_words


def test_an_unknown_strategy_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="strategy"):
        parse_settings('[model]\nstrategy = "clever"\n')


def house() -> Registry:
    registry = Registry()

    @registry.skill
    def cpu_temperature() -> dict[str, Any]:
        """The CPU temperature in °C."""
        return {"value": 48.3, "unit": "°C"}

    @registry.skill
    def now() -> dict[str, Any]:
        """The local date and time right now."""
        return {"time": "17:45"}

    return registry


@pytest.mark.parametrize("strategy", ["guided", "plain"])
def test_the_daemon_runs_the_configured_strategy(strategy: str, scripted_daemon: Any) -> None:
    # The script's first reply calls the first skill, as a small model does whatever it is
    # asked; the scores say the question fits the clock. Guided, the clock is called and the
    # engine renders the answer; plain, the model's own (wrong) call stands, and its answer,
    # which no result of that call holds, is refused (docs/design.md, "Grounding").
    replies = ['{"skill_name": "cpu_temperature", "arguments": {}}', '{"final_answer": "17:45."}']
    model = MockModel(
        replies if strategy == "plain" else replies[1:],
        scores={("local date and time", " What time is it?"): -1.0, ANSWER_HEAD: 0.0},
    )
    _, endpoint = scripted_daemon(
        config=f'[model]\nstrategy = "{strategy}"\n', registry=house(), load=lambda: model
    )
    with Client(endpoint, timeout=60) as client:
        result = client.run("What time is it?", AskOptions(max_iterations=4))
    called = [e["skill_name"] for e in result["state"]["events"] if e["type"] == "CallSkillAction"]
    assert called == (["now"] if strategy == "guided" else ["cpu_temperature"])
    if strategy == "guided":
        # The engine states the clock's result.
        assert (result["outcome"], result["answer"]) == ("answered", "The time is 17:45.")
        return
    assert result["answer"] is None
    refused = [e for e in result["state"]["events"] if e.get("validator_name") == "grounding"]
    assert refused[0]["error_type"] == "value_not_in_evidence" and "'17'" in refused[0]["feedback"]


def test_a_scripted_model_keeps_its_script_under_auto() -> None:
    # `serve --model mock:FILE` replays the user's script: its answers are not replaced by the
    # engine's under auto, and are under plain.
    scripted = guidance_for("auto", MockModel([]))
    assert isinstance(scripted, Answering) and scripted.own_words
    plain = guidance_for("plain", MockModel([]))
    assert isinstance(plain, Answering) and not plain.own_words
