"""Asks that wait for their run while the bridge's link to the broker fails: each still gets
exactly one final reply once the link is back, or, when it cannot come back before the daemon
stops, each is named in the log (docs/mqtt.md, *Reliability*).

A real daemon process (mock model) and a real Mosquitto. The bridge reaches the broker through a
relay the test cuts (mqtt_harness.Relay), so its link drops while the broker, and the asker's own
session, stay up: what reaches the asker is what the bridge sent, not what a restarted broker
kept. Waits are bounded and generous; nothing asserts on timing.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("paho.mqtt")

from daemon_harness import running_server
from mqtt_harness import Node, Relay, final, node

from edge_agentd.service.config.mqtt import MqttSettings
from edge_agentd.service.mqtt.bridge import MqttBridge
from scripts.testbed.mosquitto import MOSQUITTO, Peer, broker, wait_for

pytestmark = pytest.mark.skipif(
    MOSQUITTO is None, reason="needs Debian's mosquitto (make deps installs it)"
)


@pytest.fixture
def relayed(tmp_path: Path) -> Iterator[tuple[Any, Relay]]:
    with broker(tmp_path / "broker") as b:
        relay = Relay(b.port)
        try:
            yield b, relay
        finally:
            relay.close()


def finals(peer: Peer, topic: str, wanted: int, timeout: float = 90.0) -> list[dict[str, Any]]:
    """The final replies on ``topic``: ``wanted`` of them, then whatever else comes in a quiet
    while (a second final reply to one ask would show here)."""
    got: list[dict[str, Any]] = []

    def is_final(payload: bytes) -> bool:
        return json.loads(payload).get("kind") in ("result", "error")

    for _ in range(wanted):
        message = peer.wait(
            lambda m: m.topic == topic and is_final(m.payload) and json.loads(m.payload) not in got,
            timeout,
        )
        got.append(json.loads(message.payload))
    got += [
        json.loads(m.payload) for m in peer.quiet(3.0) if m.topic == topic and is_final(m.payload)
    ]
    return got


def ask(peer: Peer, node_id: str, query: str, reply_to: str, request_id: Any) -> None:
    peer.publish(
        f"edge-agent/{node_id}/ask", {"query": query, "reply_to": reply_to, "id": request_id}
    )


@contextlib.contextmanager
def asked(
    relayed: tuple[Any, Relay], directory: Path, node_id: str, replies: list[Any], *topics: str
) -> Iterator[tuple[Node, Peer]]:
    """A daemon whose bridge reaches the broker through the relay, linked, and an asker on the
    broker itself subscribed to ``topics``."""
    b, relay = relayed
    with node(directory, port=relay.port, node=node_id, replies=replies) as n:
        n.wait_link("connected")
        asker = Peer(b.port, subscribe=list(topics))
        try:
            yield n, asker
        finally:
            asker.close()


def cut_while_running(n: Node, relay: Relay) -> None:
    wait_for(lambda: n.status()["state"] == "busy", 30, "the run started")
    relay.cut()
    wait_for(lambda: n.status()["mqtt"]["link"] != "connected", 60, "the link dropped")


def test_a_result_finished_while_the_link_is_cut_reaches_the_asker_once(
    relayed: tuple[Any, Relay], tmp_path: Path
) -> None:
    relay = relayed[1]
    slow = {"text": final("I cannot tell: Worth the wait."), "delay_s": 4}
    with asked(relayed, tmp_path / "d", "cut", [slow], "asker/answer") as (n, asker):
        ask(asker, "cut", "Slow one", "asker/answer", 42)
        cut_while_running(n, relay)
        wait_for(lambda: n.status()["counters"]["runs_finished"] == 1, 60, "run finished")
        assert n.status()["mqtt"]["unsent"] == 1  # held for the broker, not lost
        relay.mend()
        n.wait_link("connected", timeout=120)
        got = finals(asker, "asker/answer", 1)
        assert [(r["id"], r["answer"]) for r in got] == [(42, "I cannot tell: Worth the wait.")]
        wait_for(lambda: n.status()["mqtt"]["unsent"] == 0, 60, "the result acknowledged")
        assert n.status()["mqtt"]["counters"].get("undeliverable", 0) == 0
        assert relay.accepted >= 2  # it came over a new connection


def test_asks_waiting_across_a_cut_and_a_mend_each_get_one_reply(
    relayed: tuple[Any, Relay], tmp_path: Path
) -> None:
    relay = relayed[1]
    slow = [
        {"text": final(f"I cannot tell: answer {i}."), "delay_s": 8 if i == 0 else 0}
        for i in range(3)
    ]
    with asked(relayed, tmp_path / "d", "mended", slow, "asker/+") as (n, asker):
        for i in range(3):  # one runs, two wait in the daemon's queue
            ask(asker, "mended", f"Question {i}", f"asker/{i}", f"q-{i}")
        # All three asks are the daemon's before the cut: an ask still on its way to the bridge
        # when the link drops is the broker's to keep or drop, not the daemon's to answer.
        wait_for(lambda: n.status()["queue_depth"] == 2, 60, "two asks queued behind the run")
        cut_while_running(n, relay)
        relay.mend()  # back before the runs are done: their results go out as usual
        for i in range(3):
            got = finals(asker, f"asker/{i}", 1)
            assert [r["id"] for r in got] == [f"q-{i}"]
            assert got[0]["kind"] == "result"
        assert n.status()["mqtt"]["counters"].get("undeliverable", 0) == 0


def test_each_ask_the_link_could_not_answer_before_the_daemon_stopped_is_logged(
    relayed: tuple[Any, Relay], tmp_path: Path
) -> None:
    slow = [
        {"text": final("I cannot tell: Too late."), "delay_s": 3},
        final("I cannot tell: also."),
    ]
    with asked(relayed, tmp_path / "d", "alone", slow) as (n, asker):
        ask(asker, "alone", "First", "asker/a", "first-ask")
        ask(asker, "alone", "Second", "asker/a", "second-ask")
        cut_while_running(n, relayed[1])
        wait_for(lambda: n.status()["counters"]["runs_finished"] == 2, 60, "runs finished")
        assert n.status()["mqtt"]["unsent"] == 2
        assert n.stop() == 0
    log = n.output()
    assert "could not be delivered before shutdown" in log
    for request_id in ("first-ask", "second-ask"):
        assert f"the result of ask {request_id!r} for asker/a" in log


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_network_thread_is_started_again_and_the_waiting_ask_answered(
    relayed: tuple[Any, Relay],
) -> None:
    """paho's network thread ends (here: a ``SystemExit`` out of a callback, which paho does not
    catch), then the link is cut: only a new network thread reads the socket's end and
    reconnects, so the waiting ask's result arrives only if the watch started one."""
    b, relay = relayed
    slow = {"text": final("I cannot tell: Still here."), "delay_s": 4}
    with running_server([slow]) as (server, endpoint):
        settings = MqttSettings(
            host="127.0.0.1", port=relay.port, node_id="watched", sensor_interval_s=5.0
        )
        bridge = MqttBridge(settings)
        server.attach("mqtt", bridge.status, bridge.threads)
        bridge.start(endpoint)
        asker = Peer(b.port, subscribe=["asker/answer"])
        try:
            wait_for(lambda: bridge.state.link == "connected", 60, "the link up")
            ended = threading.Event()
            on_message = bridge.broker.client.on_message

            def ends_the_thread(client: Any, userdata: Any, message: Any) -> None:
                if not ended.is_set():
                    ended.set()
                    raise SystemExit("paho's network thread ends here")
                on_message(client, userdata, message)

            ask(asker, "watched", "Slow one", "asker/answer", 7)
            wait_for(lambda: server.status()["state"] == "busy", 30, "the run started")
            bridge.broker.client.on_message = ends_the_thread
            asker.publish("homeassistant/status", "online")  # the next message the bridge reads
            wait_for(ended.is_set, 30, "the network thread ended")
            relay.cut()
            wait_for(
                lambda: bridge.state.counters().get("network_restarts") == 1,
                30,
                "the network thread started again",
            )
            relay.mend()
            got = finals(asker, "asker/answer", 1)
            assert [(r["id"], r["kind"]) for r in got] == [(7, "result")]
            assert got[0]["answer"] == "I cannot tell: Still here."
            wait_for(lambda: bridge.status()["unsent"] == 0, 60, "the result acknowledged")
            assert server.status()["crashed_threads"] == {}
        finally:
            asker.close()
            bridge.stop()
