"""The run queue's order: asks before trigger runs, but no trigger run waits for ever behind a
queue that is never empty of asks (a script asking in a loop)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd.agent.run import RunOptions
from edge_agentd.service.runs.jobs import Job
from edge_agentd.service.runs.queue import TRIGGER_PATIENCE, RunQueue


def job(name: str, trigger: str | None = None) -> Job:
    return Job(name, [b"x"], RunOptions("q", max_iterations=4, max_retries=1), False, trigger=trigger)


def test_a_trigger_run_starts_behind_a_bounded_number_of_asks_however_many_keep_coming() -> None:
    queue = RunQueue(4)
    queue.add(job("t1", "freezer"))
    started: list[str] = []
    for n in range(6):
        queue.add(job(f"a{n}"))  # an ask always waits: the queue is never empty of them
        running = queue.start_next()
        assert running is not None
        started.append(running.request_id)
        queue.finished(running)
    assert started.index("t1") == TRIGGER_PATIENCE
    assert started[:TRIGGER_PATIENCE] == [f"a{n}" for n in range(TRIGGER_PATIENCE)]


@settings(max_examples=200)
@given(st.lists(st.sampled_from(["ask", "trigger", "start", "cancel"]), max_size=60))
def test_every_run_starts_once_and_no_trigger_run_is_passed_more_than_its_patience(
    steps: list[str],
) -> None:
    queue = RunQueue(8)
    passed: dict[str, int] = {}
    started: list[str] = []
    for index, step in enumerate(steps):
        if step in ("ask", "trigger") and not queue.full:
            name = f"{step}{index}"
            queue.add(job(name, "t" if step == "trigger" else None))
            if step == "trigger":
                passed[name] = 0
        elif step == "cancel":
            waiting = [n for n in passed if queue.holds(n) and queue.running is None]
            for name in waiting[:1]:
                assert queue.remove_waiting(name) is not None
                del passed[name]
        elif step == "start":
            running = queue.start_next()
            if running is None:
                continue
            started.append(running.request_id)
            if running.trigger is None:
                for name in passed:
                    if queue.holds(name):
                        passed[name] += 1
            queue.finished(running)
    assert len(started) == len(set(started))
    assert all(count <= TRIGGER_PATIENCE for count in passed.values()), passed
