"""The MQTT bridge's own threads run on the daemon's one thread pattern: a crash of one shows in
the daemon's ``status`` (which thread, and why; the daemon ``degraded``) and in its log.

The readings' thread: a real daemon process with the bridge on, against a real Mosquitto, and a
plugin's sensor skill that calls ``sys.exit`` (``SystemExit`` is no ``Exception``, so it passes
the readings' own handling). The link's thread: driven in-process against a real daemon, as the
bridge drives it, with a first step that exits past its supervisor, which restarts the link on
an ``Exception`` only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from daemon_harness import running_server
from mqtt_harness import Node

from edge_agentd.service.mqtt.daemonlink import DaemonLink, Pending
from edge_agentd.service.mqtt.state import BridgeState
from scripts.testbed.mosquitto import broker, wait_for

EXITING_SENSORS = '''
import sys


def register(registry):
    @registry.skill
    def list_sensors() -> dict:
        """The sensors: this plugin exits the process instead of listing them."""
        sys.exit(3)

    @registry.skill
    def read_sensor(name: str) -> dict:
        """One sensor's readings."""
        return {"name": name, "readings": []}
'''


def test_a_crash_of_the_bridges_thread_shows_in_status_and_the_log(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "exiting.py").write_text(EXITING_SENSORS)
    skills = (
        f"[skills]\nbuiltins = false\nentry_points = false\n"
        f"directories = [{json.dumps(str(plugins))}]\n"
    )
    with broker(tmp_path / "broker") as b:
        node = Node(tmp_path / "d", port=b.port, node="crashy", extra=skills)
        try:
            # Not node(): it waits for `ready`, and this daemon is `degraded` from the first
            # round of readings on.
            def crashed() -> bool:
                if node.process.poll() is not None:
                    raise RuntimeError(f"the daemon exited:\n{node.output()}")
                try:
                    return bool(node.status()["crashed_threads"])
                except TimeoutError:  # not bound yet
                    return False

            wait_for(crashed, 60, "a crashed thread in status")
            wait_for(lambda: node.status()["state"] == "degraded", 60, "degraded")
            status = node.status()
            assert status["crashed_threads"] == {"mqtt-sensors": "SystemExit: 3"}
            assert status["mqtt"]["node"] == "crashy"
            assert "thread mqtt-sensors crashed: SystemExit: 3" in node.output()
            # The rest of the daemon goes on: the model loads and runs are answered.
            wait_for(lambda: node.status()["model"].get("kind") is not None, 60, "model loaded")
            reply = node.request({"v": 1, "id": "after", "op": "run", "query": "Still there?"})
            assert reply["kind"] == "result" and reply["outcome"] == "answered"
        finally:
            node.stop()


def test_a_crash_of_the_links_thread_shows_in_the_daemons_status() -> None:
    def first_step() -> None:
        raise SystemExit("the link's first step exited")

    def unexpected(pending: Pending, reply: dict[str, Any]) -> None:
        raise AssertionError(f"no ask was sent, yet {pending} got {reply}")

    with running_server() as (server, endpoint):
        state = BridgeState()
        link = DaemonLink(
            state,
            on_final=unexpected,
            on_progress=unexpected,
            on_daemon_status=lambda reply: None,
            on_started=first_step,
        )
        server.attach("mqtt", state.snapshot, [link.thread])
        link.start(endpoint)
        try:
            wait_for(lambda: bool(server.status()["crashed_threads"]), 30, "a crashed thread")
            status = server.status()
            assert status["crashed_threads"] == {
                "mqtt-bridge": "SystemExit: the link's first step exited"
            }
            assert status["state"] == "degraded"
            assert status["mqtt"]["counters"].get("link_failures", 0) == 0  # not restarted
        finally:
            link.stop(5)
