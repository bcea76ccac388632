"""A clock the tests move, a probe whose temperature they set, and a runner wired to both."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from edge_agentd.agent.registry import Registry
from edge_agentd.service.config.settings import parse_settings
from edge_agentd.service.config.triggers import check_triggers
from edge_agentd.service.triggers.firing import Firing, TriggerMemory
from edge_agentd.service.triggers.report import trigger_entries
from edge_agentd.service.triggers.runner import TriggerRunner
from edge_agentd.skills import register_builtins
from edge_agentd.skills.demo import SysfsTree

PROBE = "28-00000a1b2c3d"
BERLIN = ZoneInfo("Europe/Berlin")


class FakeClock:
    """Wall-clock seconds that move only when a test says so."""

    def __init__(self, start: dt.datetime, zone: dt.tzinfo = BERLIN) -> None:
        self.t = start.timestamp()
        self._zone = zone

    def now(self) -> float:
        return self.t

    @property
    def zone(self) -> dt.tzinfo:
        return self._zone


class Probe:
    """A 1-Wire probe in a fake sysfs tree, read through the real ``read_sensor``."""

    def __init__(self, sysfs: SysfsTree, celsius: float = -18.0) -> None:
        self.device = sysfs.w1_probe(PROBE, None, temperature=str(round(celsius * 1000)))

    def set(self, celsius: float) -> None:
        (self.device / "temperature").write_text(f"{round(celsius * 1000)}\n")


def builtin_registry(sysfs_root: Path) -> Registry:
    registry = Registry()
    register_builtins(registry, sysfs_root=sysfs_root)
    return registry


class Harness:
    """A runner over ``config``'s triggers whose firings are collected, not queued."""

    def __init__(
        self,
        config: str,
        registry: Registry,
        clock: FakeClock,
        memory: TriggerMemory | None = None,
    ) -> None:
        settings = parse_settings(config)
        check_triggers(settings.triggers, registry, settings.workflows, settings.problem)
        self.clock = clock
        self.firings: list[Firing] = []
        self.results: list[dict[str, Any]] = []
        self.runner = TriggerRunner(
            settings.triggers, registry, self.firings.append, clock=clock, memory=memory
        )
        self.runner.listeners.append(self.results.append)

    def step(self, seconds: float = 0.0, *, wait_s: float = 10.0) -> None:
        """Move the clock, do what is due, and let the checks it started finish."""
        self.clock.t += seconds
        self.runner.poll()
        self.runner.wait_checks(wait_s)

    def answer(self, text: str = "done") -> None:
        """The last firing's run ends, answered."""
        firing = self.firings[-1]
        self.runner.finished(firing.trigger, firing.run_id, "answered", text)

    def state(self, name: str) -> str:
        return next(e["state"] for e in trigger_entries(self.runner) if e["name"] == name)
