"""Each token evaluated once: a step's reply stays in the KV cache, sampled or forced.

With the embedded model, in-process: after a reply, the next prompt (which repeats it) evaluates
only what is new since the reply ended, at most two more (the last prompt token is always run
again for its logits, and an end-of-turn token the model sampled is never in the cache), even
where the reply's text tokenizes differently from how it was generated.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from edge_agentd import Agent, AgentState, Completion, Registry, load_model
from edge_agentd.agent.events import CallSkillAction, FinalAnswerAction, Usage
from edge_agentd.agent.grounding import Grounding
from edge_agentd.model.llama import LlamaModel

RegistryFactory = Callable[..., Registry]  # conftest.py


def read_sensor(name: str) -> float:
    """Read a temperature sensor, in degrees Celsius."""
    return 21.5


def clock() -> str:
    """The current local time."""
    return "12:00"


@pytest.fixture(scope="module")
def model() -> Iterator[LlamaModel]:
    handle = load_model(n_ctx=2048)
    assert isinstance(handle, LlamaModel)
    yield handle
    handle.close()


def _new(before: Usage, after: Usage) -> int:
    """The tokens of ``after``'s prompt after the end of ``before``'s reply."""
    assert before.prompt_tokens and after.prompt_tokens and before.generated_tokens is not None
    return after.prompt_tokens - before.prompt_tokens - before.generated_tokens


def test_each_step_evaluates_only_what_is_new_since_the_reply(
    model: LlamaModel, make_registry: RegistryFactory
) -> None:
    agent = Agent(model, make_registry(read_sensor, clock), grounding=Grounding())
    model.warm_up(agent.preamble())
    state = agent.run("What time is it?", max_iterations=4)
    usages = [e.usage for e in state.stream if isinstance(e, CallSkillAction | FinalAnswerAction)]
    assert len(usages) >= 2, state.stream
    for before, after in itertools.pairwise(usages):
        assert before is not None and after is not None and after.evaluated_tokens is not None
        assert after.evaluated_tokens <= _new(before, after) + 2, (before, after)


def test_a_reply_that_tokenizes_differently_is_not_evaluated_again(
    model: LlamaModel, make_registry: RegistryFactory
) -> None:
    agent = Agent(model, make_registry(read_sensor, clock), grounding=Grounding())
    fmt = model.chat_format
    prompt = agent.render_prompt(AgentState(query="What is the temperature?"))
    schema = agent.registry.action_schema()
    # A start that ends inside a word: the model's next token continues it, and the whole
    # text, tokenized afresh, would merge across that boundary ("The tem" + "perature"; which
    # start does depends on the prompt: "The kitch" did before the grounding rules joined it).
    reply = model.generate(
        prompt, action_schema=schema, prefix='{"final_answer": "The tem', max_tokens=12
    )
    assert isinstance(reply, Completion) and reply.usage is not None
    generated = model._continuation.tokens
    canonical = model.tokenize(prompt + str(reply))
    assert generated != canonical, "the reply tokenizes as it was generated: nothing to test"
    follow_up = prompt + fmt.model_turn_end(str(reply)) + fmt.user_turn("Say it again.")
    again = model.generate(follow_up, max_tokens=1)
    assert isinstance(again, Completion) and again.usage is not None
    assert again.usage.evaluated_tokens is not None
    assert again.usage.evaluated_tokens <= _new(reply.usage, again.usage) + 2, again.usage
