"""`edge-agent ask --mqtt HOST` without `--node`: with exactly one node online it asks that one (and
says which on a terminal); with none or several it refuses, naming them. Against a real Mosquitto
and real `edge-agent serve` nodes (scripts/testbed/mosquitto.py, tests/mqtt_harness.py)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("paho.mqtt")

from mqtt_harness import final, node

from scripts.testbed.mosquitto import MOSQUITTO, broker

pytestmark = pytest.mark.skipif(
    MOSQUITTO is None, reason="needs Debian's mosquitto (make deps installs it)"
)

CLI = [sys.executable, "-m", "edge_agentd.cli"]


def ask(port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "ask", "--mqtt", f"127.0.0.1:{port}", "--timeout", "30", *args],
        capture_output=True, text=True, timeout=90, check=False,
    )


def ask_on_a_terminal(port: int, question: str) -> tuple[int, str, str]:
    """The ask with its stderr a terminal (a pty), as a person runs it: exit code, stdout, and
    what the terminal showed."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*CLI, "ask", "--mqtt", f"127.0.0.1:{port}", "--timeout", "30", question],
            stdout=subprocess.PIPE, stderr=follower, text=True, timeout=90, check=False,
        )
    finally:
        os.close(follower)
    shown = b""
    try:
        while chunk := os.read(leader, 4096):
            shown += chunk
    except OSError:  # EIO: the terminal's other side is closed and everything was read
        pass
    finally:
        os.close(leader)
    return done.returncode, done.stdout, shown.decode(errors="replace")


@pytest.fixture
def own_broker(tmp_path: Path) -> Any:
    # A broker of its own: the shared ones keep other tests' nodes' retained statuses.
    with broker(tmp_path / "broker") as b:
        yield b


def test_no_node_online_is_unavailable_and_says_so(own_broker: Any) -> None:
    nobody = ask(own_broker.port, "Anyone there?")
    assert nobody.returncode == 69, nobody.stderr
    assert "no edge-agent node is online on 127.0.0.1" in nobody.stderr


def test_the_one_node_online_is_asked_and_named_on_a_terminal(
    own_broker: Any, tmp_path: Path
) -> None:
    with node(tmp_path / "k", port=own_broker.port, node="kitchen-pi",
              replies=[final("I cannot tell from the kitchen.")] * 3) as kitchen:
        kitchen.wait_link("connected")
        asked = ask(own_broker.port, "Who are you?")
        assert (asked.returncode, asked.stdout) == (0, "I cannot tell from the kitchen.\n"), asked.stderr
        assert "asking" not in asked.stderr  # not a terminal: nothing but the answer
        code, stdout, shown = ask_on_a_terminal(own_broker.port, "Who are you?")
        assert (code, stdout) == (0, "I cannot tell from the kitchen.\n"), shown
        assert "asking kitchen-pi, the one node online on 127.0.0.1" in shown
    # Offline now: it is named as such, and nothing is asked.
    gone = ask(own_broker.port, "Still there?")
    assert gone.returncode == 69
    assert "no edge-agent node is online" in gone.stderr and "offline: kitchen-pi" in gone.stderr


def test_several_nodes_online_are_listed_and_none_is_chosen(
    own_broker: Any, tmp_path: Path
) -> None:
    with (
        node(tmp_path / "k", port=own_broker.port, node="kitchen-pi",
             replies=[final("I cannot tell from the kitchen.")]) as kitchen,
        node(tmp_path / "g", port=own_broker.port, node="garage-pi",
             replies=[final("I cannot tell from the garage.")]) as garage,
    ):
        kitchen.wait_link("connected")
        garage.wait_link("connected")
        several = ask(own_broker.port, "Who are you?")
        assert several.returncode == 65, several.stderr
        assert "2 nodes are online on 127.0.0.1" in several.stderr
        assert "garage-pi, kitchen-pi" in several.stderr and "--node NAME" in several.stderr
        assert kitchen.status()["counters"]["runs_accepted"] == 0
        assert garage.status()["counters"]["runs_accepted"] == 0
        named = ask(own_broker.port, "--node", "garage-pi", "Who are you?")
        assert (named.returncode, named.stdout) == (0, "I cannot tell from the garage.\n"), named.stderr
