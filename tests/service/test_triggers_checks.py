"""``when`` checks that hang or raise: the runner sleeps through a hung call instead of spinning,
and a check that raises anything (``BaseException`` included) makes its trigger ``failing`` with
that error and is tried again at the next check."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from triggers_harness import BERLIN, FakeClock, Harness, builtin_registry

from edge_agentd.agent.registry import Registry
from edge_agentd.service.triggers.report import trigger_entries
from edge_agentd.skills.demo import SysfsTree

NOON = dt.datetime(2026, 7, 1, 12, 0, tzinfo=BERLIN)
GAUGE = """
[[triggers]]
name = "gauge"
when = { skill = "gauge", above = 10.0, for = "0s", check_every = "10s" }
query = "Is the gauge too high?"
"""


def entry(harness: Harness, name: str = "gauge") -> dict[str, Any]:
    return next(e for e in trigger_entries(harness.runner) if e["name"] == name)


def hanging_registry(sysfs_root: Path, gate: threading.Event) -> Registry:
    registry = builtin_registry(sysfs_root)

    @registry.skill(timeout=1.0)
    def gauge() -> dict[str, float]:
        """A gauge whose bus hangs until the test lets it go."""
        gate.wait(30)
        return {"value": 50.0}

    return registry


def test_a_hung_check_past_its_deadline_lets_the_runner_sleep(sysfs: SysfsTree) -> None:
    gate = threading.Event()
    harness = Harness(GAUGE, hanging_registry(sysfs.root, gate), FakeClock(NOON))
    try:
        harness.step(wait_s=0.2)
        assert harness.runner.poll() == pytest.approx(1.0)  # until the check's deadline
        harness.step(2.0, wait_s=0.2)  # past the skill's 1 s timeout: abandoned
        assert harness.state("gauge") == "failing"
        assert "ran past 1 s" in entry(harness)["error"]
        # Nothing to do until the next check, 8 s away: the deadline that passed is not due
        # again (the runner's thread used to wait 0 s on it, over and over, while the call hung).
        assert harness.runner.poll() == pytest.approx(8.0)
        harness.step(3.0, wait_s=0.2)
        assert harness.runner.poll() == pytest.approx(5.0)
    finally:
        gate.set()
    runner = harness.runner
    with runner.lock:  # the call comes back and clears its check itself
        assert runner.lock.wait_for(lambda: runner.records["gauge"].check is None, 10)
    for _ in range(100):  # its thread ends, and the next check runs
        harness.step(10)
        if harness.state("gauge") == "fired":
            break
        time.sleep(0.05)
    assert harness.state("gauge") == "fired", entry(harness)


@pytest.mark.parametrize(
    "raised",
    [SystemExit(3), KeyboardInterrupt(), GeneratorExit(), MemoryError("no room"), OSError("gone")],
    ids=lambda exc: type(exc).__name__,
)
def test_a_check_that_raises_anything_fails_its_trigger_and_is_tried_again(
    sysfs: SysfsTree, raised: BaseException
) -> None:
    failing = [True]
    registry = builtin_registry(sysfs.root)

    @registry.skill(timeout=1.0)
    def gauge() -> dict[str, float]:
        """A gauge that raises while the test says so."""
        if failing[0]:
            raise raised
        return {"value": 50.0}

    harness = Harness(GAUGE, registry, FakeClock(NOON))
    harness.step()
    assert harness.state("gauge") == "failing"
    error = entry(harness)["error"]
    assert error.startswith(type(raised).__name__), error
    assert "ran past" not in error
    assert harness.runner.poll() == pytest.approx(10.0)  # no check in flight to wait on
    harness.step(10)
    assert entry(harness)["counts"]["checks"] == 2  # tried again at the next check
    assert entry(harness)["counts"]["checks_failed"] == 2
    failing[0] = False
    harness.step(10)
    assert harness.state("gauge") == "fired"
    assert entry(harness)["error"] is None
    assert len(harness.firings) == 1
