"""The MQTT bridge against a real Mosquitto: asks (v5 and 3.1.1), bad payloads, status and Last
Will, a fleet, broker restarts, credentials and TLS, floods.

Every daemon is a real ``edge-agent serve --model mock:FILE`` process; every broker a real
``mosquitto`` on a random loopback port (scripts/testbed/mosquitto.py). Waits are bounded and generous, and
nothing asserts on timing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("paho.mqtt")

from mqtt_harness import final, node
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from scripts.testbed.mosquitto import MOSQUITTO, OPENSSL, Peer, TlsFiles, broker, wait_for

pytestmark = pytest.mark.skipif(
    MOSQUITTO is None, reason="needs Debian's mosquitto (make deps installs it)"
)

CLI = [sys.executable, "-m", "edge_agentd.cli"]


def v5_props(response_topic: str, correlation: bytes) -> Properties:
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = response_topic
    props.CorrelationData = correlation
    return props


def final_for(peer: Peer, topic: str, timeout: float = 60.0) -> dict[str, Any]:
    message = peer.on_topic(
        topic, timeout, payload=lambda p: json.loads(p).get("kind") in ("result", "error")
    )
    reply: dict[str, Any] = json.loads(message.payload)
    return reply


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with broker(tmp_path_factory.mktemp("broker")) as b:
        yield b


# -- asking -----------------------------------------------------------------------------------------


def test_v5_request_response_and_311_reply_to(shared_broker: Any, tmp_path: Path) -> None:
    with node(tmp_path / "d", port=shared_broker.port, node="asker", replies=[final("I cannot tell: warm.")]) as n:
        peer = Peer(shared_broker.port, subscribe=["replies/#"])
        legacy = Peer(shared_broker.port, v5=False, subscribe=["legacy/#"])
        try:
            n.wait_link("connected")
            peer.publish(
                "edge-agent/asker/ask",
                {"query": "How warm is it?", "deadline_ms": 30000},
                properties=v5_props("replies/one", b"\x00corr\xff"),
            )
            message = peer.on_topic("replies/one", 60)
            reply = json.loads(message.payload)
            assert message.properties.CorrelationData == b"\x00corr\xff"
            assert message.properties.ContentType == "application/json"
            assert reply["kind"] == "result" and reply["outcome"] == "answered"
            assert reply["answer"] == "I cannot tell: warm."
            assert reply["node"] == "asker"
            assert reply["state"]["query"] == "How warm is it?"
            assert reply["state"]["events"][-1]["type"] == "FinalAnswerAction"
            assert set(reply["timing"]) == {"queued_ms", "run_ms"}

            # MQTT 3.1.1 (Node-RED, Home Assistant): reply_to and id in the payload, with progress.
            legacy.publish(
                "edge-agent/asker/ask",
                {"query": "And now?", "reply_to": "legacy/r", "id": "n-1", "stream": True},
            )
            result = final_for(legacy, "legacy/r")
            replies = [json.loads(m.payload) for m in legacy.seen if m.topic == "legacy/r"]
            assert [r["kind"] for r in replies] == ["accepted", "event", "result"]
            assert all(r["id"] == "n-1" for r in replies)
            assert result["answer"] == "I cannot tell: warm."
            # Exactly one final reply each: nothing more comes.
            assert not [m for m in legacy.quiet(1.0) if m.topic == "legacy/r"]
            counters = n.status()["counters"]
            assert counters["runs_finished"] == 2  # the same queue and counters as ZeroMQ
        finally:
            peer.close()
            legacy.close()


def test_an_ask_published_twice_is_run_once(shared_broker: Any, tmp_path: Path) -> None:
    """QoS 1 delivers at least once, and a requester may publish again: the same Correlation Data
    on the same reply topic is the journal's key, so the second ask gets the first run's result."""
    with node(tmp_path / "d", port=shared_broker.port, node="twice", replies=[final("I cannot tell: warm.")]) as n:
        peer = Peer(shared_broker.port, subscribe=["replies/#"])
        try:
            n.wait_link("connected")
            ask = {"query": "How warm is it?", "deadline_ms": 30000}
            peer.publish("edge-agent/twice/ask", ask, properties=v5_props("replies/t", b"c-1"))
            first = final_for(peer, "replies/t")
            peer.seen.clear()
            peer.publish("edge-agent/twice/ask", ask, properties=v5_props("replies/t", b"c-1"))
            second = final_for(peer, "replies/t")
            assert first["answer"] == second["answer"] == "I cannot tell: warm."
            assert n.status()["counters"]["runs_finished"] == 1
            # Another correlation is another ask, and it runs.
            peer.seen.clear()
            peer.publish("edge-agent/twice/ask", ask, properties=v5_props("replies/t", b"c-2"))
            final_for(peer, "replies/t")
            assert n.status()["counters"]["runs_finished"] == 2
            # The same correlation with another question is not that ask: never its answer.
            peer.seen.clear()
            other = {"query": "What is the load average?", "deadline_ms": 30000}
            peer.publish("edge-agent/twice/ask", other, properties=v5_props("replies/t", b"c-1"))
            refused = final_for(peer, "replies/t")
            assert (refused["kind"], refused["code"]) == ("error", "key_conflict"), refused
            assert "21 C." not in json.dumps(refused)
            assert n.status()["counters"]["runs_finished"] == 2
        finally:
            peer.close()


def test_the_journal_records_where_each_run_was_asked(shared_broker: Any, tmp_path: Path) -> None:
    """A run asked over MQTT is journaled as ``mqtt``, though the bridge forwards it over the
    daemon's ZeroMQ socket; one asked over ZeroMQ stays ``zmq``; an ask may not name its own."""
    with node(tmp_path / "d", port=shared_broker.port, node="origin", replies=[final("I cannot tell: Yes.")]) as n:
        peer = Peer(shared_broker.port, v5=False, subscribe=["origin/#"])
        try:
            n.wait_link("connected")
            peer.publish("edge-agent/origin/ask", {"query": "Asked by MQTT", "reply_to": "origin/r"})
            assert final_for(peer, "origin/r")["answer"] == "I cannot tell: Yes."
            direct = n.request({"v": 1, "id": "z-1", "op": "run", "query": "Asked by ZeroMQ"})
            assert direct["answer"] == "I cannot tell: Yes.", direct

            # An asker claiming the source is refused before anything runs, either claim.
            for claim in ("zmq", "mqtt"):
                peer.seen.clear()
                peer.publish(
                    "edge-agent/origin/ask",
                    {"query": "q", "reply_to": "origin/r", "id": claim, "source": claim},
                )
                refused = final_for(peer, "origin/r")
                assert refused["kind"] == "error" and refused["code"] == "bad_request", refused
                assert refused["id"] == claim and "source" in refused["message"], refused

            listed = n.request({"v": 1, "id": "list", "op": "runs", "limit": 10})
            sources = {run["query"]: run["source"] for run in listed["runs"]}
            assert sources == {"Asked by MQTT": "mqtt", "Asked by ZeroMQ": "zmq"}, listed
            record = n.request({"v": 1, "id": "one", "op": "result", "target": "z-1"})
            assert record["source"] == "zmq", record
        finally:
            peer.close()


def test_bad_payloads_get_protocol_errors(shared_broker: Any, tmp_path: Path) -> None:
    with node(
        tmp_path / "d",
        port=shared_broker.port,
        node="picky",
        daemon="max_request_bytes = 2048\nmax_query_chars = 100",
        extra='[workflows.health]\ninstructions = "x"\n',
    ) as n:
        peer = Peer(shared_broker.port, subscribe=["bad/#"])
        try:
            n.wait_link("connected")
            ask = "edge-agent/picky/ask"
            cases: list[tuple[str, bytes | dict[str, Any], str]] = [
                ("not-json", b"{nope", "bad_request"),
                ("array", b"[1, 2]", "bad_request"),
                ("wrong-type", {"query": 5}, "bad_request"),
                ("float-steps", {"query": "q", "max_iterations": 2.5}, "bad_request"),
                ("workflow", {"query": "q", "workflow": "nope"}, "bad_request"),
                ("unknown-field", {"query": "q", "colour": "red"}, "bad_request"),
                ("long-query", {"query": "q" * 500}, "too_large"),
                ("huge", {"query": "q", "pad": "x" * 5000}, "too_large"),
                ("version", {"query": "q", "v": 2}, "unsupported_version"),
            ]
            for name, payload, _ in cases:
                peer.publish(ask, payload, properties=v5_props(f"bad/{name}", name.encode()))
            for name, _, code in cases:
                reply = final_for(peer, f"bad/{name}")
                assert reply["kind"] == "error", name
                assert reply["code"] == code, (name, reply)
            # 3.1.1 errors echo the id; a bad id is itself a bad_request.
            peer.publish(ask, {"query": 5, "reply_to": "bad/legacy", "id": "L1"})
            assert final_for(peer, "bad/legacy")["id"] == "L1"
            peer.publish(ask, {"query": "q", "reply_to": "bad/badid", "id": [1]})
            assert final_for(peer, "bad/badid")["code"] == "bad_request"
            # No usable reply topic: logged and counted, nothing published.
            before = n.status()["mqtt"]["counters"].get("unanswerable", 0)
            peer.publish(ask, {"query": "who hears me?"})
            peer.publish(ask, b"not json and no response topic")
            peer.publish(ask, {"query": "q", "reply_to": "wild/+/card"})
            wait_for(
                lambda: n.status()["mqtt"]["counters"].get("unanswerable", 0) == before + 3,
                30,
                "unanswerable counted",
            )
            assert not [m for m in peer.quiet(1.0) if m.topic.startswith("bad/")]
            errors = n.status()["counters"]["errors_by_code"]
            assert errors.get("bad_request", 0) >= 3  # the daemon itself judged the run fields
            assert "cannot be answered" in n.output()
        finally:
            peer.close()


def test_status_info_and_last_will(shared_broker: Any, tmp_path: Path) -> None:
    watcher = Peer(shared_broker.port, subscribe=["edge-agent/+/status", "edge-agent/+/info"])
    try:
        with node(tmp_path / "a", port=shared_broker.port, node="willing") as n:
            watcher.on_topic("edge-agent/willing/status", 60, payload=lambda p: p == b"online")
            info = json.loads(
                watcher.on_topic(
                    "edge-agent/willing/info", 60, payload=lambda p: b'"ready"' in p
                ).payload
            )
            assert info["node"] == "willing" and info["protocol"] == 1
            assert info["model"]["spec"].startswith("mock:")
            assert "cpu_temperature" in info["skills"] and info["version"]
            status = n.wait_link("connected")
            assert status["node"] == "willing" and status["broker"].startswith("127.0.0.1:")
            assert n.stop(signal.SIGKILL) == -signal.SIGKILL
            # The broker publishes the Last Will once it sees the connection drop.
            watcher.on_topic("edge-agent/willing/status", 60, payload=lambda p: p == b"offline")
        # A clean stop says offline itself; both are retained for late subscribers.
        watcher.seen.clear()
        with node(tmp_path / "b", port=shared_broker.port, node="clean") as n:
            watcher.on_topic("edge-agent/clean/status", 60, payload=lambda p: p == b"online")
            n.wait_link("connected")
            assert n.stop() == 0
        watcher.on_topic("edge-agent/clean/status", 60, payload=lambda p: p == b"offline")
        assert "closed; counters" in n.output()
        late = Peer(shared_broker.port, subscribe=["edge-agent/clean/status"])
        try:
            message = late.on_topic("edge-agent/clean/status", 30)
            assert message.retain and message.payload == b"offline"
        finally:
            late.close()
    finally:
        watcher.close()


def test_queue_full_is_busy_and_a_flood_stays_bounded(shared_broker: Any, tmp_path: Path) -> None:
    slow = {"text": final("I cannot tell: done"), "delay_s": 2}
    with node(
        tmp_path / "d",
        port=shared_broker.port,
        node="flooded",
        replies=[slow],
        daemon="queue_limit = 1",
    ) as n:
        peer = Peer(shared_broker.port, subscribe=["flood/#"])
        try:
            n.wait_link("connected")
            total = 300
            for i in range(total):
                peer.client.publish(
                    "edge-agent/flooded/ask",
                    json.dumps({"query": f"q{i}", "reply_to": f"flood/{i}"}),
                    qos=1,
                )
            finals: dict[str, dict[str, Any]] = {}
            waiting: list[int] = []

            def all_answered() -> bool:
                mqtt_status = n.status()["mqtt"]
                waiting.append(mqtt_status["pending"])
                assert mqtt_status["pending"] <= mqtt_status["pending_limit"] == 64
                while True:
                    try:
                        message = peer.next(0.2)
                    except Exception:
                        break
                    reply = json.loads(message.payload)
                    assert message.topic not in finals, "two final replies to one ask"
                    finals[message.topic] = reply
                return len(finals) == total

            wait_for(all_answered, 120, "every ask answered once")
            codes = [r.get("code") for r in finals.values() if r["kind"] == "error"]
            answered = [r for r in finals.values() if r["kind"] == "result"]
            assert answered, "the first asks run"
            assert codes and set(codes) == {"busy"}, set(codes)
            status = n.status()
            assert status["counters"]["errors_by_code"].get("busy", 0) + status["mqtt"][
                "counters"
            ].get("busy_at_bridge", 0) == len(codes)
            assert status["mqtt"]["pending"] <= 2
            assert max(waiting) <= 64  # docs/mqtt.md, Reliability: the bound holds in a flood
        finally:
            peer.close()


# -- cancel -----------------------------------------------------------------------------------------


def test_only_the_asker_cancels_a_run_over_mqtt(shared_broker: Any, tmp_path: Path) -> None:
    slow = {"text": final("I cannot tell: Too slow to wait for."), "delay_s": 60}
    with node(
        tmp_path / "d",
        port=shared_broker.port,
        node="cancelling",
        replies=[slow, slow, slow],
        daemon="shutdown_grace_s = 0.5",
    ) as n:
        owner = Peer(shared_broker.port, v5=False, subscribe=["c/#"])
        v5 = Peer(shared_broker.port, subscribe=["v5/#"])
        try:
            n.wait_link("connected")
            ask = "edge-agent/cancelling/ask"
            owner.publish(ask, {"query": "slow", "reply_to": "c/owner", "id": "run-1"})
            wait_for(lambda: n.status()["state"] == "busy", 30, "the run started")
            # A v5 asker's run waits behind it; an id in the ask makes it cancellable.
            v5.publish(
                ask, {"query": "queued", "id": 7}, properties=v5_props("v5/mine", b"ask-corr")
            )
            wait_for(lambda: n.status()["queue_depth"] == 1, 30, "the second run queued")

            # Anyone else, even knowing the id: another reply topic is another owner, answered
            # exactly as for a run that does not exist, and nothing is cancelled.
            owner.publish(
                ask, {"op": "cancel", "target": "run-1", "reply_to": "c/intruder", "id": "x1"}
            )
            v5.publish(ask, {"op": "cancel", "target": 7}, properties=v5_props("v5/other", b"x"))
            for peer, topic in ((owner, "c/intruder"), (v5, "v5/other")):
                refused = final_for(peer, topic)
                assert refused["kind"] == "result" and refused["op"] == "cancel", refused
                assert (refused["cancelled"], refused["was"]) == (False, None)
            status = n.status()
            assert (status["state"], status["queue_depth"]) == ("busy", 1)
            assert status["counters"].get("runs_cancelled", 0) == 0

            # The v5 asker: the same Response Topic, its own Correlation Data for the cancel.
            v5.publish(
                ask, {"op": "cancel", "target": 7}, properties=v5_props("v5/mine", b"cancel-corr")
            )
            replies = {}
            while len(replies) < 2:
                message = v5.on_topic("v5/mine", 60, payload=lambda p: b'"result"' in p)
                v5.seen.remove(message)
                replies[message.properties.CorrelationData] = json.loads(message.payload)
            assert replies[b"cancel-corr"]["op"] == "cancel"
            assert replies[b"cancel-corr"]["target"] == 7
            assert (replies[b"cancel-corr"]["cancelled"], replies[b"cancel-corr"]["was"]) == (
                True,
                "queued",
            )
            assert replies[b"ask-corr"]["id"] == 7
            assert replies[b"ask-corr"]["outcome"] == "interrupted"

            # The 3.1.1 asker: the same reply_to, the run's id as the target.
            owner.publish(
                ask, {"op": "cancel", "target": "run-1", "reply_to": "c/owner", "id": "c-1"}
            )
            by_id = {}
            while len(by_id) < 2:
                message = owner.on_topic("c/owner", 60, payload=lambda p: b'"result"' in p)
                owner.seen.remove(message)
                reply = json.loads(message.payload)
                by_id[reply["id"]] = reply
            assert (by_id["c-1"]["cancelled"], by_id["c-1"]["was"]) == (True, "running")
            assert by_id["c-1"]["target"] == "run-1"
            interrupted = by_id["run-1"]
            assert interrupted["outcome"] == "interrupted" and interrupted["answer"] is None
            assert interrupted["state"]["events"][-1] == {
                "type": "InterruptedObservation",
                "reason": "cancelled",
            }
            assert n.status()["counters"]["runs_cancelled"] == 2  # the daemon's own counters

            # Once answered, the run is nobody's: a late cancel finds nothing.
            owner.publish(
                ask, {"op": "cancel", "target": "run-1", "reply_to": "c/owner", "id": "c-2"}
            )
            late = owner.on_topic("c/owner", 60, payload=lambda p: b'"c-2"' in p)
            assert json.loads(late.payload)["cancelled"] is False

            # Bad cancels get protocol errors, with the cancel's own id.
            for name, payload in (
                ("no-target", {"op": "cancel"}),
                ("bad-target", {"op": "cancel", "target": [1]}),
                ("run-field", {"op": "cancel", "target": "run-1", "query": "q"}),
                ("bad-op", {"op": "stop", "target": "run-1"}),
            ):
                owner.publish(ask, {**payload, "reply_to": f"c/bad/{name}", "id": name})
                error = final_for(owner, f"c/bad/{name}")
                assert (error["kind"], error["code"], error["id"]) == ("error", "bad_request", name)
        finally:
            owner.close()
            v5.close()


def test_an_id_still_running_is_refused_as_over_zeromq(shared_broker: Any, tmp_path: Path) -> None:
    # Slow enough that the first run is surely still going when its duplicate arrives.
    slow = {"text": final("I cannot tell: Done."), "delay_s": 8}
    with node(
        tmp_path / "d", port=shared_broker.port, node="twice", replies=[slow, final("I cannot tell: Done.")]
    ) as n:
        peer = Peer(shared_broker.port, v5=False, subscribe=["t/#"])
        try:
            n.wait_link("connected")
            first = {"query": "q", "reply_to": "t/r", "id": "same"}
            peer.publish("edge-agent/twice/ask", first)
            wait_for(lambda: n.status()["state"] == "busy", 30, "the run started")
            peer.publish("edge-agent/twice/ask", first)
            refused = final_for(peer, "t/r")
            assert (refused["kind"], refused["code"]) == ("error", "bad_request"), refused
            peer.seen.remove(next(m for m in peer.seen if m.topic == "t/r"))
            assert final_for(peer, "t/r")["answer"] == "I cannot tell: Done."
            # The same id on another reply topic is another asker's.
            peer.publish("edge-agent/twice/ask", {**first, "reply_to": "t/other"})
            assert final_for(peer, "t/other")["answer"] == "I cannot tell: Done."
        finally:
            peer.close()


def test_ask_over_mqtt_cancels_its_run_on_ctrl_c_and_on_timeout(
    shared_broker: Any, tmp_path: Path
) -> None:
    slow = {"text": final("I cannot tell: Never seen."), "delay_s": 60}
    with node(tmp_path / "d", port=shared_broker.port, node="patient-ask",
              replies=[slow, slow]) as n:
        n.wait_link("connected")
        base = [*CLI, "ask", "--mqtt", f"127.0.0.1:{shared_broker.port}", "--node", "patient-ask"]
        asking = subprocess.Popen(
            [*base, "--timeout", "120", "slow?"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: n.status()["state"] == "busy", 60, "the run started")
            asking.send_signal(signal.SIGINT)
            _, stderr = asking.communicate(timeout=60)
        finally:
            if asking.poll() is None:
                asking.kill()
        assert asking.returncode == 130, stderr
        wait_for(lambda: n.status()["counters"].get("runs_cancelled", 0) == 1, 60, "cancelled")
        wait_for(lambda: n.status()["state"] == "ready", 60, "the model freed")

        timed_out = subprocess.run(
            [*base, "--timeout", "2", "slow again?"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert timed_out.returncode == 75, timed_out.stderr
        wait_for(lambda: n.status()["state"] == "ready", 60, "the model freed again")
        counters = n.status()["counters"]
        # The deadline (sent as deadline_ms) or the client's cancel, whichever came first.
        assert counters["outcomes"].get("interrupted", 0) == 2, counters


# -- a fleet ----------------------------------------------------------------------------------------


def test_two_nodes_answer_only_their_own_and_the_cli_finds_them(
    shared_broker: Any, tmp_path: Path
) -> None:
    port = str(shared_broker.port)
    with (
        node(tmp_path / "k", port=shared_broker.port, node="kitchen-pi",
             replies=[final("I cannot tell: Kitchen here.")]) as kitchen,
        node(tmp_path / "g", port=shared_broker.port, node="garage-pi",
             replies=[final("I cannot tell: Garage here.")]) as garage,
    ):
        kitchen.wait_link("connected")
        garage.wait_link("connected")
        listing = subprocess.run(
            [*CLI, "nodes", "--mqtt", f"127.0.0.1:{port}", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert listing.returncode == 0, listing.stderr
        nodes = {entry["node"]: entry for entry in json.loads(listing.stdout)}
        assert {"kitchen-pi", "garage-pi"} <= set(nodes)
        assert nodes["kitchen-pi"]["status"] == "online"
        assert nodes["garage-pi"]["info"]["model"]["spec"].startswith("mock:")

        for name, expected in (("kitchen-pi", "I cannot tell: Kitchen here."), ("garage-pi", "I cannot tell: Garage here.")):
            asked = subprocess.run(
                [*CLI, "ask", "--mqtt", f"127.0.0.1:{port}", "--node", name, "Who are you?"],
                capture_output=True,
                text=True,
                timeout=90,
                check=False,
            )
            assert asked.returncode == 0, asked.stderr
            assert asked.stdout.strip() == expected
        assert kitchen.status()["counters"]["runs_finished"] == 1
        assert garage.status()["counters"]["runs_finished"] == 1

        as_json = subprocess.run(
            [*CLI, "ask", "--mqtt", f"127.0.0.1:{port}", "--node", "garage-pi", "--json", "q"],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert as_json.returncode == 0 and json.loads(as_json.stdout)["answer"] == "I cannot tell: Garage here."
        bad = subprocess.run(
            [
                *CLI,
                "ask",
                "--mqtt",
                f"127.0.0.1:{port}",
                "--node",
                "garage-pi",
                "--workflow",
                "nope",
                "q",
            ],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert bad.returncode == 65, bad.stderr
    gone = subprocess.run(
        [*CLI, "ask", "--mqtt", f"127.0.0.1:{port}", "--node", "garage-pi", "--timeout", "5", "q"],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert gone.returncode == 69 and "offline" in gone.stderr
    nobody = subprocess.run(
        [*CLI, "ask", "--mqtt", f"127.0.0.1:{port}", "--node", "shed-pi", "--timeout", "2", "q"],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert nobody.returncode == 69
    listing = subprocess.run(
        [*CLI, "nodes", "--mqtt", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "kitchen-pi" not in listing.stdout  # offline nodes are listed only with --all


# -- reliability ------------------------------------------------------------------------------------


def test_broker_down_at_start_then_up(tmp_path: Path) -> None:
    b = broker(tmp_path / "broker")
    with b as started:
        port = started.port
        started.stop()
        with node(tmp_path / "d", port=port, node="patient") as n:
            # ZeroMQ serves while the broker is away, and status says so.
            reply = n.request({"v": 1, "id": "r1", "op": "run", "query": "still there?"}, 30)
            assert reply["outcome"] == "answered"
            mqtt_status = n.wait_link("disconnected")
            assert mqtt_status["last_problem"]
            started.start()
            n.wait_link("connected", timeout=120)  # reconnects with backoff (at most 60 s)
            peer = Peer(port, subscribe=["edge-agent/patient/status"])
            try:
                assert peer.on_topic("edge-agent/patient/status", 30).payload == b"online"
            finally:
                peer.close()


def test_broker_restart_mid_run_delivers_the_result_after_reconnect(tmp_path: Path) -> None:
    with broker(tmp_path / "broker", persistence=True) as b:
        slow = {"text": final("I cannot tell: Worth the wait."), "delay_s": 4}
        with node(tmp_path / "d", port=b.port, node="steady", replies=[slow]) as n:
            n.wait_link("connected")
            # A 3.1.1 requester with a persistent session: the broker keeps its subscription
            # (and what is published to it) across the restart.
            requester = Peer(
                b.port, v5=False, clean=False, client_id="ha-requester", subscribe=["ha/answer"]
            )
            requester.publish(
                "edge-agent/steady/ask",
                {"query": "Slow one", "reply_to": "ha/answer", "id": 42},
            )
            wait_for(lambda: n.status()["state"] == "busy", 30, "the run started")
            requester.close()
            b.stop()  # the broker goes away while the model is still working
            wait_for(lambda: n.status()["counters"]["runs_finished"] == 1, 60, "run finished")
            status = n.status()["mqtt"]
            assert status["link"] != "connected" and status["unsent"] == 1
            b.start()
            n.wait_link("connected", timeout=120)
            wait_for(lambda: n.status()["mqtt"]["unsent"] == 0, 60, "result delivered")
            back = Peer(
                b.port, v5=False, clean=False, client_id="ha-requester", subscribe=["ha/answer"]
            )
            try:
                reply = final_for(back, "ha/answer")
                assert reply["id"] == 42 and reply["answer"] == "I cannot tell: Worth the wait."
            finally:
                back.close()
            assert n.status()["mqtt"]["counters"].get("undeliverable", 0) == 0


def test_an_undeliverable_result_is_counted_and_logged(tmp_path: Path) -> None:
    with broker(tmp_path / "broker") as b:
        slow = {"text": final("I cannot tell: Too late."), "delay_s": 3}
        with node(tmp_path / "d", port=b.port, node="lonely", replies=[slow]) as n:
            n.wait_link("connected")
            peer = Peer(b.port, v5=False)
            peer.publish("edge-agent/lonely/ask", {"query": "q", "reply_to": "x/y"})
            peer.close()
            wait_for(lambda: n.status()["state"] == "busy", 30, "the run started")
            b.stop()
            wait_for(lambda: n.status()["counters"]["runs_finished"] == 1, 60, "run finished")
            assert n.stop() == 0
        assert "could not be delivered before shutdown" in n.output()
        assert "x/y" in n.output()


# -- credentials and TLS ----------------------------------------------------------------------------


def test_credentials_and_tls_never_reach_the_log(tmp_path: Path) -> None:
    if OPENSSL is None:
        pytest.skip("needs the openssl command")
    secret = "s3cr3t-" + uuid.uuid4().hex
    tls = TlsFiles(tmp_path / "tls")
    with broker(tmp_path / "broker", users={"pi": secret, "ha": "ha-pass"}, tls=tls) as b:
        password_file = tmp_path / "mqtt-password"
        password_file.write_text(secret + "\n")
        password_file.chmod(0o600)
        with node(
            tmp_path / "d",
            port=b.tls_port,
            node="secure",
            replies=[final("I cannot tell: Over TLS.")],
            mqtt=(
                f'username = "pi"\npassword_file = "{password_file}"\nca_file = "{tls.ca}"\n'
                f'cert_file = "{tls.client_cert}"\nkey_file = "{tls.client_key}"\n'
            ),
            log_level="DEBUG",
        ) as n:
            status = n.wait_link("connected")
            assert status["tls"] is True
            peer = Peer(b.port, username="ha", password="ha-pass", subscribe=["r/#"])
            try:
                peer.publish(
                    "edge-agent/secure/ask", {"query": "q"}, properties=v5_props("r/1", b"1")
                )
                assert final_for(peer, "r/1")["answer"] == "I cannot tell: Over TLS."
            finally:
                peer.close()
        # A wrong password: refused, reported in status, and ZeroMQ still answers.
        wrong = tmp_path / "wrong-password"
        wrong.write_text("not-" + secret + "\n")
        with node(
            tmp_path / "w",
            port=b.port,
            node="refused",
            mqtt=f'username = "pi"\npassword_file = "{wrong}"\n',
            log_level="DEBUG",
        ) as w:
            w.wait_link("refused")
            assert w.request({"v": 1, "id": "z", "op": "run", "query": "q"})["kind"] == "result"
        key_text = tls.client_key.read_text()
        key_body = key_text.splitlines()[1]
        for output in (n.output(), w.output()):
            assert secret not in output
            assert key_body not in output
        assert "refused" in w.output()


def test_config_errors_stop_the_daemon_before_it_serves(tmp_path: Path) -> None:
    cases = {
        "node": 'node_id = "kitchen/pi"\n',
        "password": 'username = "pi"\npassword = "inline"\n',
        "missing-password-file": 'username = "pi"\npassword_file = "/nonexistent/pw"\n',
        "key-without-cert": 'key_file = "/etc/hostname"\n',
        "unreadable-ca": 'ca_file = "/nonexistent/ca.crt"\n',
    }
    mock = tmp_path / "mock.json"
    mock.write_text(json.dumps([final("I cannot tell.")]))
    for name, body in cases.items():
        config = tmp_path / f"{name}.toml"
        config.write_text(f'[mqtt]\nhost = "127.0.0.1"\nport = 1\n{body}')
        result = subprocess.run(
            [
                *CLI,
                "serve",
                "--model",
                f"mock:{mock}",
                "--config",
                str(config),
                "--endpoint",
                f"ipc://{tmp_path}/{name}.sock",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 78, (name, result.stderr)
        assert "inline" not in result.stderr


def test_without_an_mqtt_section_status_is_as_before(tmp_path: Path) -> None:
    mock = tmp_path / "mock.json"
    mock.write_text(json.dumps([final("I cannot tell.")]))
    from daemon_harness import start_daemon, stop_daemon, wait_ready

    endpoint = f"ipc://{tmp_path}/plain.sock"
    daemon = start_daemon(["--model", f"mock:{mock}", "--endpoint", endpoint])
    try:
        wait_ready(endpoint, daemon)
        import msgpack
        import zmq

        context: zmq.Context[Any] = zmq.Context()
        sock = context.socket(zmq.DEALER)
        sock.connect(endpoint)
        sock.send(msgpack.packb({"v": 1, "id": "s", "op": "status"}))
        assert sock.poll(10000)
        status = msgpack.unpackb(sock.recv())
        context.destroy(linger=0)
        assert status["mqtt"] is None  # the field is there, empty, as docs/protocol.md says
    finally:
        output = stop_daemon(daemon)
    assert "mqtt:" not in output
    # Without [mqtt] the extra is never even imported: the daemon works without paho installed.
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, edge_agentd.cli.main as c, edge_agentd.service.config.settings as k;"
            "p = c._parser(); p.parse_args(['serve']);"
            "from edge_agentd.service.mqtt.makebridge import make_bridge;"
            "from edge_agentd.agent.registry import Registry;"
            "assert make_bridge(k.Settings(), Registry()) is None;"
            "assert not [m for m in sys.modules if m.startswith('paho')], 'paho imported'",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
