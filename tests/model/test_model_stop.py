"""A run's deadline and cancel stop the real model inside the call it is in (llama.cpp's abort
callback), and the model is left as it was: the next call gives what it would have given.

The stop is made to land inside llama.cpp without timing: the check says "stop" only when the
model's stop watch asks it, and the run's own thread, between tokens, waits until the watch has
raised the flag. So every decode after that is stopped by llama.cpp itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from edge_agentd import Agent, MockModel, Registry, load_model
from edge_agentd.agent.events import InterruptedObservation
from edge_agentd.model.formats import GEMMA3
from edge_agentd.model.llama import Interrupted, LlamaModel
from edge_agentd.service.config.strategy import guidance_for

N_CTX = 2048
WATCH = "edge-agent-model-stop"
PROMPT = GEMMA3.opening("", "Count from one to fifty in words.")


@pytest.fixture(scope="module")
def model() -> Iterator[LlamaModel]:
    handle = load_model(n_ctx=N_CTX)
    assert isinstance(handle, LlamaModel)
    yield handle
    handle.close()


def stop_inside() -> Callable[[], bool]:
    """A check that says stop only to the model's stop watch: the call's own thread waits,
    at its next check between tokens, until the watch has raised llama.cpp's abort flag."""
    raised = threading.Event()

    def check() -> bool:
        if threading.current_thread().name == WATCH:
            raised.set()
            return True
        raised.wait(60)
        return False

    return check


def cancel_in_a_model_call() -> Callable[[], bool]:
    """A cancel that arrives while the model is inside a call: the stop watch is the first to
    see it, and from then on everyone does."""
    raised = threading.Event()

    def check() -> bool:
        if threading.current_thread().name == WATCH:
            raised.set()
        return raised.is_set()

    return check


def test_llama_cpp_says_nothing_of_a_stop_as_an_error(
    model: LlamaModel, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="edge_agentd.model.llama_cpp"):
        model.forget()
        model.generate(PROMPT, constrained=False, max_tokens=4, should_stop=stop_inside())
    assert "ret = 2" in caplog.text
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_reply_stopped_inside_llama_cpp_leaves_the_cache_as_it_was(model: LlamaModel) -> None:
    model.forget()
    before = model.generate(PROMPT, constrained=False, max_tokens=24)
    model.forget()
    stopped = model.generate(PROMPT, constrained=False, max_tokens=24, should_stop=stop_inside())
    assert stopped.usage is not None and stopped.usage.stop == "interrupted"
    assert stopped.usage.generated_tokens is not None and stopped.usage.generated_tokens <= 1
    again = model.generate(PROMPT, constrained=False, max_tokens=24)
    assert str(again) == str(before)
    assert again.usage is not None and again.usage.stop == before.usage.stop  # type: ignore[union-attr]


def test_scoring_stopped_inside_llama_cpp_raises_and_changes_nothing(model: LlamaModel) -> None:
    options = [" One", " Two", " one, two"]
    described = [GEMMA3.opening("", "Reads a thermometer"), GEMMA3.opening("", "Turns a lamp on")]
    scores = model.score(PROMPT, options)
    likelihoods = model.likelihood(described, " how warm is it")
    with model.interruptible(should_stop=stop_inside()), pytest.raises(Interrupted):
        model.score(PROMPT + " Please.", options)
    with model.interruptible(should_stop=stop_inside()), pytest.raises(Interrupted):
        model.likelihood([GEMMA3.opening("", "Opens the garage door")], " how warm is it")
    assert model.score(PROMPT, options) == scores
    assert model.likelihood(described, " how warm is it") == pytest.approx(likelihoods)
    # Outside the block nothing is watched: a call runs to its end.
    assert model.likelihood([GEMMA3.opening("", "Opens the garage door")], " warm") != []


def test_a_passed_deadline_stops_a_call_inside_interruptible(model: LlamaModel) -> None:
    with model.interruptible(deadline=time.monotonic()):
        late = model.generate(PROMPT + " Go.", constrained=False, max_tokens=24)
    assert late.usage is not None and late.usage.stop == "interrupted"


def test_a_run_cancelled_inside_the_model_ends_interrupted_and_the_next_run_answers(
    model: LlamaModel,
) -> None:
    registry = Registry()

    @registry.skill
    def room_temperature() -> str:
        """The temperature in the living room."""
        return "21.5 C"

    agent = Agent(model, registry, guidance=guidance_for("auto", model))
    question = "How warm is the living room?"
    expected = agent.run(question)
    cancelled = agent.run(question, should_stop=cancel_in_a_model_call())
    assert cancelled.outcome == "interrupted"
    assert cancelled.stream[-1] == InterruptedObservation(reason="cancelled")
    assert cancelled.final_answer is None
    again = agent.run(question)
    assert again.outcome == expected.outcome
    assert again.final_answer == expected.final_answer


def test_an_answer_made_past_the_deadline_is_not_the_runs() -> None:
    class Late(MockModel):
        """Answers only once the run's deadline has passed, ignoring it, as a model call that
        cannot be stopped would."""

        def generate(self, prompt: str, **kwargs: object) -> str:
            deadline = kwargs["deadline"]
            assert isinstance(deadline, float)
            while time.monotonic() < deadline:
                time.sleep(0.01)
            return super().generate(prompt, **kwargs)

    model = Late(['{"final_answer": "It is 21.5 C."}'])
    state = Agent(model, Registry()).run("How warm is it?", deadline=time.monotonic() + 0.05)
    assert state.outcome == "interrupted"
    assert state.stream[-1] == InterruptedObservation(reason="deadline")
    assert state.final_answer is None


def test_a_stop_check_that_raises_is_logged_and_stops_nothing(
    model: LlamaModel, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> bool:
        if threading.current_thread().name == WATCH:
            raise LookupError("a broken cancel check")
        return False

    with caplog.at_level(logging.ERROR, logger="edge_agentd.model.stopping"):
        reply = model.generate(PROMPT, constrained=False, max_tokens=4, should_stop=broken)
    assert reply.usage is not None and reply.usage.stop == "length"
    assert "stop check raised" in caplog.text
