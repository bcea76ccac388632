"""Triggers over the fake sysfs with a clock the tests move: crossing, holding, firing once,
flapping, hysteresis, schedules around DST, failing and hung skills, and a restart."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from triggers_harness import BERLIN, PROBE, FakeClock, Harness, Probe, builtin_registry

from edge_agentd.agent.registry import Registry
from edge_agentd.service.config.settings import ConfigError, parse_settings
from edge_agentd.service.config.triggers import WhenSettings, check_triggers
from edge_agentd.service.triggers.condition import Condition, ReadingError, read_field
from edge_agentd.service.triggers.firing import Remembered
from edge_agentd.service.triggers.report import trigger_entries
from edge_agentd.service.triggers.schedule import next_at
from edge_agentd.skills.demo import SysfsTree

FREEZER = f"""
[[triggers]]
name = "freezer"
when = {{ skill = "read_sensor", arguments = {{ name = "{PROBE}" }}, above = -10.0, for = "5m", hysteresis = 2.0 }}
query = "Is the freezer too warm?"
cooldown = "10m"
"""
NOON = dt.datetime(2026, 7, 1, 12, 0, tzinfo=BERLIN)


@pytest.fixture
def probe(sysfs: SysfsTree) -> Probe:
    return Probe(sysfs)


@pytest.fixture
def freezer(sysfs: SysfsTree, probe: Probe) -> Harness:
    return Harness(FREEZER, builtin_registry(sysfs.root), FakeClock(NOON))


def test_a_crossing_that_holds_for_its_time_fires_once(freezer: Harness, probe: Probe) -> None:
    freezer.step()
    assert freezer.state("freezer") == "armed" and not freezer.firings
    probe.set(-8.5)
    freezer.step(30)
    assert freezer.state("freezer") == "holding"
    for _ in range(9):  # 4.5 minutes more: not yet 5 minutes held
        freezer.step(30)
    assert not freezer.firings
    freezer.step(30)
    assert len(freezer.firings) == 1 and freezer.state("freezer") == "fired"
    firing = freezer.firings[0]
    assert firing.source == "trigger:freezer"
    assert firing.reading is not None and firing.reading.value == -8.5
    assert firing.reading.unit == "°C" and firing.reading.arguments == {"name": PROBE}
    assert firing.query.startswith(f"read_sensor {PROBE} reads -8.5 °C, above the limit of -10 °C")
    for _ in range(40):  # it stays warm for 20 minutes: still the one firing
        freezer.step(30)
    assert len(freezer.firings) == 1


def test_a_dip_inside_the_hold_starts_it_again(freezer: Harness, probe: Probe) -> None:
    probe.set(-9.0)
    freezer.step()
    freezer.step(240)
    probe.set(-11.0)
    freezer.step(30)
    probe.set(-9.0)
    freezer.step(30)
    freezer.step(240)
    assert not freezer.firings
    freezer.step(60)
    assert len(freezer.firings) == 1


def test_hysteresis_re_arms_only_past_its_margin(freezer: Harness, probe: Probe) -> None:
    probe.set(-5.0)
    freezer.step()
    freezer.step(300)
    assert len(freezer.firings) == 1
    freezer.answer()
    probe.set(-11.0)  # below the threshold, but not by the 2 degrees of hysteresis
    freezer.step(30)
    assert freezer.state("freezer") == "fired"
    probe.set(-5.0)
    freezer.step(900)
    freezer.step(300)
    assert len(freezer.firings) == 1
    probe.set(-12.5)  # out by more than 2 degrees: re-armed
    freezer.step(30)
    assert freezer.state("freezer") == "armed"
    probe.set(-5.0)
    freezer.step(30)
    freezer.step(300)
    assert len(freezer.firings) == 2


def test_flapping_inside_the_cooldown_fires_once(sysfs: SysfsTree, probe: Probe) -> None:
    config = FREEZER.replace('for = "5m", hysteresis = 2.0', 'for = "0s", check_every = "15s"')
    harness = Harness(config, builtin_registry(sysfs.root), FakeClock(NOON))
    for _ in range(19):  # 9.5 minutes of a reading that crosses at every check
        probe.set(-5.0)
        harness.step(15)
        harness.answer()
        probe.set(-15.0)
        harness.step(15)
    assert len(harness.firings) == 1
    probe.set(-5.0)
    harness.step(60)  # past the ten minutes
    assert len(harness.firings) == 2


def test_a_firing_while_its_run_is_pending_is_skipped(sysfs: SysfsTree, probe: Probe) -> None:
    config = FREEZER.replace('for = "5m", hysteresis = 2.0', 'for = "0s"').replace(
        'cooldown = "10m"', 'cooldown = "1m"'
    )
    harness = Harness(config, builtin_registry(sysfs.root), FakeClock(NOON))
    probe.set(-5.0)
    harness.step()
    probe.set(-15.0)
    harness.step(120)
    probe.set(-5.0)
    harness.step(120)  # its first run never ended
    assert len(harness.firings) == 1
    entry = trigger_entry(harness, "freezer")
    assert entry["counts"]["skipped"] == 1 and entry["running"]
    harness.answer("It is -5 °C.")
    assert harness.results[-1]["answer"] == "It is -5 °C."
    assert harness.results[-1]["reading"]["value"] == -5.0


def trigger_entry(harness: Harness, name: str) -> dict[str, Any]:
    return next(e for e in trigger_entries(harness.runner) if e["name"] == name)


# -- the condition alone, for any readings ---------------------------------------------------

readings = st.lists(
    st.tuples(st.floats(1, 120), st.floats(-30, 10, allow_nan=False)), min_size=1, max_size=80
)


@given(readings=readings)
def test_any_readings_fire_at_most_once_per_cooldown_and_only_inside(readings: list) -> None:
    when = WhenSettings.model_validate({"skill": "s", "above": -10.0, "hysteresis": 1.0})
    condition = Condition(when, cooldown_s=600.0)
    now, fired = 0.0, []
    for gap, value in readings:
        now += gap
        if condition.observe(now, value):
            assert value > -10.0
            fired.append(now)
    assert all(b - a >= 600.0 for a, b in itertools.pairwise(fired))


def test_read_field_finds_the_number_and_says_what_is_missing() -> None:
    one = {"sensor": "p", "readings": [{"quantity": "temperature", "value": 3.5, "unit": "°C"}]}
    assert read_field(one, "value") == (3.5, "°C")
    assert read_field({"memory": {"available_mib": 812}}, "memory.available_mib") == (812.0, None)
    assert read_field({"readings": [{"value": 1}, {"value": 2}]}, "readings.1.value")[0] == 2.0
    with pytest.raises(ReadingError, match="2 readings"):
        read_field({"readings": [{"value": 1}, {"value": 2}]}, "value")
    with pytest.raises(ReadingError, match="no field 'celsius'"):
        read_field({"value": 1}, "celsius")
    for bad in (True, "3", float("nan"), None):
        with pytest.raises(ReadingError, match="not a finite number"):
            read_field({"value": bad}, "value")


# -- schedules around DST --------------------------------------------------------------------


def local(*args: int) -> float:
    return dt.datetime(*args, tzinfo=BERLIN).timestamp()


def test_at_follows_local_time_across_both_dst_changes() -> None:
    # 2026-03-29: Berlin springs forward at 02:00 (to 03:00); 2026-10-25 falls back at 03:00.
    times = [(7, 30)]
    before = local(2026, 3, 28, 8, 0)
    due = next_at(times, before, BERLIN)
    assert dt.datetime.fromtimestamp(due, BERLIN).isoformat() == "2026-03-29T07:30:00+02:00"
    assert due - local(2026, 3, 28, 7, 30) == 23 * 3600  # the short day
    due = next_at(times, local(2026, 10, 24, 8, 0), BERLIN)
    assert dt.datetime.fromtimestamp(due, BERLIN).isoformat() == "2026-10-25T07:30:00+01:00"
    assert due - local(2026, 10, 24, 7, 30) == 25 * 3600  # the long day


def test_a_skipped_time_runs_once_and_a_repeated_one_once() -> None:
    skipped = next_at([(2, 30)], local(2026, 3, 28, 12, 0), BERLIN)
    assert dt.datetime.fromtimestamp(skipped, BERLIN).isoformat() == "2026-03-29T03:30:00+02:00"
    assert next_at([(2, 30)], skipped, BERLIN) == local(2026, 3, 30, 2, 30)
    first = next_at([(2, 30)], local(2026, 10, 24, 12, 0), BERLIN)
    assert dt.datetime.fromtimestamp(first, BERLIN).isoformat() == "2026-10-25T02:30:00+02:00"
    assert next_at([(2, 30)], first, BERLIN) == local(2026, 10, 26, 2, 30)


SCHEDULES = """
[[triggers]]
name = "morning"
at = ["07:30"]
query = "Summarise the night."

[[triggers]]
name = "often"
every = "1h"
query = "How is the device?"
"""


def test_at_and_every_fire_through_a_dst_night(tmp_path: Path) -> None:
    clock = FakeClock(dt.datetime(2026, 3, 28, 20, 0, tzinfo=BERLIN))
    harness = Harness(SCHEDULES, Registry(), clock)
    for _ in range(13 * 60):  # 13 hours, minute by minute, across the spring-forward night
        harness.step(60, wait_s=0)
        for firing in harness.firings:
            if firing.run_id not in {r["run_id"] for r in harness.results}:
                harness.runner.finished(firing.trigger, firing.run_id, "answered", "ok")
    mornings = [f for f in harness.firings if f.trigger == "morning"]
    assert [dt.datetime.fromtimestamp(f.fired_at, BERLIN).isoformat() for f in mornings] == [
        "2026-03-29T07:30:00+02:00"
    ]
    hourly = [f.fired_at for f in harness.firings if f.trigger == "often"]
    assert len(hourly) == 13  # 13 real hours, though the clock shows 14 (20:00 to 10:00)
    assert {b - a for a, b in itertools.pairwise(hourly)} == {3600.0}
    assert "ran on schedule at 2026-03-29T07:30:00+02:00" in mornings[0].query


def test_a_missed_time_is_not_run_late(tmp_path: Path) -> None:
    clock = FakeClock(dt.datetime(2026, 7, 1, 7, 0, tzinfo=BERLIN))
    harness = Harness(SCHEDULES, Registry(), clock)
    harness.step(3 * 3600, wait_s=0)  # the clock jumps past 07:30 (NTP, or a suspended board)
    assert not [f for f in harness.firings if f.trigger == "morning"]
    assert trigger_entry(harness, "morning")["counts"]["missed"] == 1


# -- skills that fail or hang ----------------------------------------------------------------


def flaky_registry(sysfs_root: Path, gate: threading.Event, fail: list[bool]) -> Registry:
    registry = builtin_registry(sysfs_root)

    @registry.skill(timeout=1.0)
    def stuck_gauge() -> dict[str, float]:
        """A gauge whose bus hangs."""
        gate.wait(30)
        return {"value": 1.0}

    @registry.skill
    def broken_gauge() -> dict[str, float]:
        """A gauge that fails when told to."""
        if fail[0]:
            raise OSError("the bus is gone")
        return {"value": 50.0}

    return registry


PAIR = (
    FREEZER.replace('for = "5m", hysteresis = 2.0', 'for = "0s"')
    + """
[[triggers]]
name = "stuck"
when = { skill = "stuck_gauge", above = 0.0, check_every = "10s" }
query = "x"

[[triggers]]
name = "broken"
when = { skill = "broken_gauge", above = 10.0, check_every = "10s" }
query = "y"
"""
)


def test_a_hung_or_raising_skill_troubles_its_trigger_alone(
    sysfs: SysfsTree, probe: Probe, caplog: pytest.LogCaptureFixture
) -> None:
    gate, fail = threading.Event(), [True]
    harness = Harness(PAIR, flaky_registry(sysfs.root, gate, fail), FakeClock(NOON))
    probe.set(-5.0)
    harness.step(wait_s=0.5)
    assert harness.state("broken") == "failing"
    assert [f.trigger for f in harness.firings] == ["freezer"]  # not held up by the hung one
    harness.step(2.0, wait_s=0.5)  # past stuck_gauge's 1 s timeout
    assert harness.state("stuck") == "failing"
    assert "ran past 1 s" in trigger_entry(harness, "stuck")["error"]
    for _ in range(5):
        harness.step(10, wait_s=0.5)
    assert trigger_entry(harness, "stuck")["counts"]["checks"] == 1  # never started twice
    warnings = [r for r in caplog.records if "broken" in r.getMessage()]
    assert len(warnings) == 1  # logged once per change, not once per check
    assert trigger_entry(harness, "broken")["counts"]["checks_failed"] == 6
    fail[0] = False
    gate.set()
    harness.step(10)
    assert harness.state("broken") == "fired"
    for _ in range(20):  # retried once the hung call came back and its thread ended
        harness.step(10)
        if harness.state("stuck") == "fired":
            break
    assert harness.state("stuck") == "fired"


# -- a restart -------------------------------------------------------------------------------


class DictMemory:
    def __init__(self) -> None:
        self.kept: dict[str, Remembered] = {}

    def recall(self, trigger: str) -> Remembered | None:
        return self.kept.get(trigger)

    def remember(self, trigger: str, remembered: Remembered) -> None:
        self.kept[trigger] = remembered


def test_after_a_restart_nothing_fires_again(sysfs: SysfsTree, probe: Probe) -> None:
    memory = DictMemory()
    config = FREEZER + SCHEDULES
    clock = FakeClock(dt.datetime(2026, 7, 1, 7, 25, tzinfo=BERLIN))
    first = Harness(config, builtin_registry(sysfs.root), clock, memory)
    probe.set(-5.0)
    first.step()
    first.step(300)
    first.step(30)  # 07:30:30: the morning ran
    assert sorted(f.trigger for f in first.firings) == ["freezer", "morning"]
    clock.t += 30  # restarted a minute later, the freezer still warm
    second = Harness(config, builtin_registry(sysfs.root), clock, memory)
    second.step()
    second.step(600)
    assert second.firings == []  # neither the warm freezer nor 07:30 once more
    assert second.state("freezer") == "fired"


# -- the config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (FREEZER + FREEZER, "line 9: triggers.1.name: a second trigger is named 'freezer'"),
        (FREEZER.replace("read_sensor", "read_sensr"), "line 4: triggers.0.when.skill: there is"),
        (FREEZER.replace('name = "28', 'nam = "28'), "triggers.0.when.arguments: read_sensor"),
        (SCHEDULES.replace('query = "How', 'workflow = "nightly"\n#'), "no workflow 'nightly'"),
    ],
)
def test_config_mistakes_name_the_line_and_the_key(
    config: str, words: str, sysfs: SysfsTree
) -> None:
    settings_ = parse_settings(config)
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        check_triggers(
            settings_.triggers, builtin_registry(sysfs.root), settings_.workflows, settings_.problem
        )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('name = "a"\nquery = "q"', "exactly one of `every`, `at` and `when`"),
        ('name = "a"\nevery = "5m"', "exactly one of `query` and `workflow`"),
        ('name = "a"\nevery = "5 minutes"\nquery = "q"', "line 3: triggers.0.every: Value error"),
        ('name = "a"\nat = "07:30"\nquery = "q"', "line 3: triggers.0.at"),
        ('name = "a"\nat = ["7:30"]\nquery = "q"', 'a time of day is "HH:MM"'),
        ('name = "a"\nevery = "5m"\nquery = "q"\ncooldwn = "1m"', "did you mean `cooldown`"),
        ('name = "a"\nquery = "q"\nwhen = { skill = "s" }', "needs `above`, `below` or both"),
        ('name = "a"\nquery = "q"\nwhen = { skill = "s", above = 2, below = 1 }', "the band"),
        ('name = "a"\nquery = "q"\nwhen = { skill = "s", above = 1, fr = "1m" }', "`for`"),
        ('name = "a"\nquery = "q"\nwhen = { skill = "s", above = 1, check_every = "0s" }', "1"),
    ],
)
def test_bad_triggers_are_config_errors(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        parse_settings(f"[daemon]\n\n[[triggers]]\n{text}\n".replace("[daemon]\n\n", "", 1))


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(st.text(max_size=30), st.integers(), st.floats(), st.booleans()))
def test_any_duration_text_is_a_config_error_or_a_duration(value: Any) -> None:
    text = f'[[triggers]]\nname = "a"\nquery = "q"\nevery = {_toml(value)}\n'
    try:
        settings_ = parse_settings(text)
    except ConfigError as exc:
        assert "triggers.0.every" in str(exc) or "not valid TOML" in str(exc)
    else:
        assert settings_.triggers[0].every_s is not None and settings_.triggers[0].every_s >= 1


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value) if math.isfinite(value) else "nan"
