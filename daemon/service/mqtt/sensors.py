"""The sensor publisher: its own thread reads the sensor skills every ``sensor_interval_s`` and
publishes the readings, so a hung sysfs read can only delay readings, never answers."""

from __future__ import annotations

import threading
from collections.abc import Callable

from edge_agentd.agent.registry import Registry
from edge_agentd.service.mqtt.discovery import Reading, collect_readings
from edge_agentd.service.mqtt.state import BridgeState, log
from edge_agentd.service.threads.daemonthread import DaemonThread

FIRST_READINGS_WAIT_S = 5.0
"""How long the bridge waits for the first readings before it connects (so the first discovery
configs name every sensor)."""


class SensorPublisher:
    """Owns the last readings; after each round, ``on_readings(readings, keys before)``."""

    def __init__(
        self,
        state: BridgeState,
        *,
        registry: Registry | None,
        interval_s: float,
        on_readings: Callable[[list[Reading], set[str]], None],
    ) -> None:
        self.state = state
        self.registry = registry
        self.interval_s = interval_s
        self._on_readings = on_readings
        self._readings: list[Reading] = []
        self._first = threading.Event()
        self._stop = threading.Event()
        self.thread = DaemonThread("mqtt-sensors", self._loop, ask_stop=self._stop.set)
        """The readings' thread: a crash (a skill that raises past ``Exception``) shows in
        ``status``."""

    def readings(self) -> list[Reading]:
        with self.state.lock:
            return list(self._readings)

    def start(self) -> None:
        self.thread.start()

    def wait_first(self, timeout: float = FIRST_READINGS_WAIT_S) -> None:
        self._first.wait(timeout)

    def stop(self, timeout: float | None = 2.0) -> bool:
        """Ask the thread to end; True when it did within ``timeout`` (a sensor read may hang)."""
        return self.thread.stop(timeout)

    def _loop(self) -> None:
        while True:
            try:
                readings = collect_readings(self.registry) if self.registry is not None else []
            except Exception:  # noqa: BLE001 - no readings this round; logged
                log.exception("mqtt: reading the sensors failed")
                readings = []
            with self.state.lock:
                before = {r.key for r in self._readings}
                self._readings = readings
            self._first.set()
            try:
                self._on_readings(readings, before)
            except Exception:  # noqa: BLE001 - the next round publishes again
                self.state.count("internal_errors")
                log.exception("mqtt: publishing the readings failed")
            if self._stop.wait(self.interval_s):
                return


__all__ = ["FIRST_READINGS_WAIT_S", "SensorPublisher"]
