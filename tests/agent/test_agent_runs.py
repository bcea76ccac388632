"""A run's options and the threads runs execute on: RunOptions checks a run's arguments once,
``start`` takes them or run's own arguments, and the record of skills that hung belongs to the
RunThreads an Agent is handed, not to the Registry."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd import Agent, AgentState, MockModel, Registry, Workflow
from edge_agentd.agent.run import RunOptions
from edge_agentd.agent.supervision import RunThreads, shared_run_threads

ANSWER = '{"final_answer": "I cannot tell: done."}'
HANG = '{"skill_name": "hang"}'

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 20),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.just(Workflow(name="w")),
    st.just(lambda: False),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(st.tuples(anything, anything, anything, anything, anything, anything))
def test_run_arguments_become_options_or_a_caller_bug(arguments: tuple[Any, ...]) -> None:
    first, query, iterations, retries, deadline, stop = arguments
    kwargs = {"deadline": deadline, "should_stop": stop}
    try:
        options = RunOptions.of(first, query, iterations, retries, **kwargs)
    except (TypeError, ValueError):
        return  # the caller's mistake, said at once
    assert isinstance(options.query, str)
    assert options.max_iterations >= 1 and options.max_retries >= 0
    # Options that were accepted run to a defined end.
    state = Agent(MockModel([ANSWER] * 3), Registry()).start(options).result()
    assert state.outcome in {"answered", "interrupted", "max_iterations", "retries_exhausted"}


def test_start_takes_options_or_runs_own_arguments() -> None:
    agent = Agent(MockModel([ANSWER, ANSWER]), Registry())
    by_options = agent.start(RunOptions("q", max_iterations=2)).result()
    by_arguments = agent.start("q", max_iterations=2).result()
    assert by_options.final_answer == by_arguments.final_answer == "I cannot tell: done."
    with pytest.raises(TypeError):
        agent.start(RunOptions("q"), "again")
    with pytest.raises(TypeError):
        agent.start(RunOptions("q"), max_iterations=3)


def test_max_iterations_defaults_to_the_workflows() -> None:
    assert RunOptions.of(Workflow(name="w", max_iterations=3), "q").max_iterations == 3
    assert RunOptions.of("q").max_iterations == 8


def _hanging_registry(release: threading.Event, started: list[float]) -> Registry:
    registry = Registry()

    @registry.skill(timeout=0.2)
    def hang() -> str:
        """Never returns in time."""
        started.append(time.monotonic())
        release.wait(10)
        return "late"

    return registry


def _errors(state: AgentState) -> list[str]:
    return [getattr(event, "error", "") for event in state.stream if hasattr(event, "error")]


def test_the_record_of_a_hung_skill_is_the_run_threads_not_the_registrys() -> None:
    release, started = threading.Event(), []
    registry = _hanging_registry(release, started)
    mine, other = RunThreads(), RunThreads()
    try:
        first = Agent(MockModel([HANG, ANSWER]), registry, threads=mine).run("q")
        again = Agent(MockModel([HANG, ANSWER]), registry, threads=mine).run("q")
        assert "timeout" in _errors(first)[0]
        assert "still running" in _errors(again)[0]
        assert len(started) == 1
        # Other threads know nothing of it: the skill is started there (and hangs again).
        elsewhere = Agent(MockModel([HANG, ANSWER]), registry, threads=other).run("q")
        assert "timeout" in _errors(elsewhere)[0]
        assert len(started) == 2
    finally:
        release.set()
        mine.close()
        other.close()


def test_agents_share_one_set_of_run_threads_unless_handed_their_own() -> None:
    registry = Registry()
    assert Agent(MockModel([]), registry).threads is shared_run_threads()
    assert Agent(MockModel([]), Registry()).threads is Agent(MockModel([]), registry).threads
    own = RunThreads()
    assert Agent(MockModel([]), registry, threads=own).threads is own
    assert not hasattr(registry, "supervisor")
