"""Every model call reports its tokens: each step's ``usage`` covers all of its calls.

The embedded Gemma 3 270M runs the guided strategy, whose skill-choice steps only score (no
``generate`` at all); their usage must still say what they evaluated and scored, so that a run's
event stream alone says what the question cost (issue 23).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from edge_agentd import Agent, AgentState, Completion, Registry, load_model
from edge_agentd.agent.events import CallSkillAction, FinalAnswerAction, Usage
from edge_agentd.agent.protocol import TokenCounts, step_usage
from edge_agentd.guidance.asked import asked_lines
from edge_agentd.guidance.guidance import Guidance
from edge_agentd.model.llama import LlamaModel
from edge_agentd.model.scripted import MockModel

RegistryFactory = Callable[..., Registry]  # conftest.py
TOKEN_FIELDS = (
    "prompt_tokens",
    "evaluated_tokens",
    "generated_tokens",
    "scored_tokens",
    "forced_tokens",
    "sampled_tokens",
)


def read_sensor(name: str) -> float:
    """Read a temperature sensor, in degrees Celsius."""
    return 21.5


def humidity() -> dict[str, float]:
    """The relative humidity and the air pressure in the living room."""
    return {"humidity_percent": 41.0, "pressure_hpa": 1013.2}


def clock() -> str:
    """The current local time."""
    return "12:00"


@pytest.fixture(scope="module")
def model() -> Iterator[LlamaModel]:
    handle = load_model(n_ctx=2048)
    assert isinstance(handle, LlamaModel)
    yield handle
    handle.close()


def _actions(state: AgentState) -> list[CallSkillAction | FinalAnswerAction]:
    return [e for e in state.stream if isinstance(e, CallSkillAction | FinalAnswerAction)]


def test_guided_steps_report_every_token_count(
    model: LlamaModel, make_registry: RegistryFactory
) -> None:
    agent = Agent(model, make_registry(read_sensor, humidity, clock), guidance=Guidance())
    model.forget()
    state = agent.run("What is the humidity?", max_iterations=3)
    actions = _actions(state)
    assert len(actions) >= 2, state.stream
    for action in actions:
        usage = action.usage
        assert usage is not None
        missing = [name for name in TOKEN_FIELDS if getattr(usage, name) is None]
        assert not missing, (action, missing)
    choice = actions[0]
    assert isinstance(choice, CallSkillAction) and choice.skill_name == "humidity"
    assert choice.usage is not None
    # The skill was chosen by scoring the question after each skill's description: tokens
    # were run through the model, and the fixed call was never sampled.
    assert (choice.usage.scored_tokens or 0) > 0
    assert choice.usage.sampled_tokens == 0
    answer = actions[-1]
    assert isinstance(answer, FinalAnswerAction) and answer.usage is not None
    # The answer is a sentence the engine rendered, chosen by scoring: nothing was sampled.
    assert answer.made_by == "engine"
    assert (answer.usage.scored_tokens or 0) > 0
    assert answer.usage.sampled_tokens == answer.usage.generated_tokens == 0
    assert (answer.usage.evaluated_tokens or 0) > 0


def test_choosing_the_asked_line_leaves_the_conversation_in_the_cache(model: LlamaModel) -> None:
    # The line names are scored beside the conversation: scored in its place, the answer that
    # follows ran the whole conversation again (2.5 s a question on the 270M).
    prompt = (
        "<start_of_turn>user\nWhat is the humidity in the living room right now?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    model.generate(prompt, max_tokens=1)
    result = {"humidity_percent": 41.0, "pressure_hpa": 1013.2}
    asked = asked_lines(model, "What is the humidity?", [("humidity", result)])
    assert asked is not None and asked  # both directions scored, a line chosen
    again = model.generate(prompt, max_tokens=1)
    assert isinstance(again, Completion) and again.usage is not None
    assert again.usage.evaluated_tokens is not None and again.usage.evaluated_tokens <= 2


def test_counts_are_per_thread_and_taken_once(model: LlamaModel) -> None:
    model.take_tokens()
    seen: list[TokenCounts] = []

    def elsewhere() -> None:
        model.generate("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", max_tokens=2)
        seen.append(model.take_tokens())

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert seen and seen[0].calls == 1 and seen[0].prompt > 0
    assert seen[0].sampled == seen[0].generated <= 2
    # Nothing the other thread did is this thread's cost, and a count is taken only once.
    assert model.take_tokens().calls == 0
    model.score("<start_of_turn>user\nYes or no?<end_of_turn>\n", ["yes", "no"])
    counts = model.take_tokens()
    assert counts.calls == 1 and counts.scored >= 0 and counts.prompt > 0
    assert model.take_tokens() == TokenCounts()


def test_a_model_that_does_not_count_keeps_its_replys_usage() -> None:
    reported = Usage(model_s=0.5, prompt_tokens=12, evaluated_tokens=3, stop="stop")
    assert step_usage(reported, None) is reported
    assert step_usage(reported, TokenCounts()) is reported
    assert MockModel([]).take_tokens() is None
    merged = step_usage(reported, TokenCounts(prompt=40, evaluated=7, scored=9, calls=2))
    assert (merged.prompt_tokens, merged.evaluated_tokens, merged.scored_tokens) == (40, 7, 9)
    assert (merged.model_s, merged.stop) == (0.5, "stop")
