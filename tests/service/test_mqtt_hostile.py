"""Hostile asks against a real Mosquitto: none can stop the bridge (issue 20).

One node takes every case in turn, so a case that kills the bridge fails every case after it,
as it would in a home: the node stops answering. Each case checks its own reply (a ``bad_request``
that echoes nothing and stays within 300 characters, or, without a reply topic, the
``unanswerable`` counter), and then that an ordinary ask is still answered and ``status`` still
tells the truth.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("paho.mqtt")

from mqtt_harness import Node, final, node
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from edge_agentd.protocol.wire import ERROR_CODES
from scripts.testbed.mosquitto import MOSQUITTO, Peer, broker, wait_for

pytestmark = pytest.mark.skipif(
    MOSQUITTO is None, reason="needs Debian's mosquitto (make deps installs it)"
)

NODE = "hostile"
ASK = f"edge-agent/{NODE}/ask"
EVIL = "zz9_evil_field"


def v5(topic: str, correlation: bytes = b"c") -> Properties:
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = topic
    props.CorrelationData = correlation
    return props


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# name -> (raw JSON payload, whether it carries reply_to itself (3.1.1) or needs a v5 topic)
ANSWERED: dict[str, tuple[str, bool]] = {
    "huge-max-iterations": ('{"query": "q", "max_iterations": 1' + "0" * 30 + "}", False),
    "huge-max-iterations-311": (
        '{"query": "q", "max_iterations": 1'
        + "0" * 30
        + ', "reply_to": "h/huge-max-iterations-311"}',
        True,
    ),
    "huge-deadline": ('{"query": "q", "deadline_ms": 1' + "0" * 400 + "}", False),
    "huge-deadline-311": (
        '{"query": "q", "deadline_ms": 1' + "0" * 400 + ', "reply_to": "h/huge-deadline-311"}',
        True,
    ),
    "surrogate-key": ('{"query": "q", "\\ud800": 1}', False),
    "surrogate-query-311": (
        '{"query": "\\ud800", "reply_to": "h/surrogate-query-311", "id": 5}',
        True,
    ),
    "surrogate-query": ('{"query": "\\ud800"}', False),
    "surrogate-workflow": ('{"query": "q", "workflow": "\\ud800"}', False),
    "surrogate-id": ('{"query": "q", "id": "\\ud800", "reply_to": "h/surrogate-id"}', True),
    "nested-field": ('{"query": "q", "x": ' + nested(2000) + "}", False),
    "nested-top": (nested(2000), False),
    "nested-60k": (nested(30_000), False),
    "nested-200k": (nested(100_000), False),
    "echo": ('{"query": "q", "' + EVIL + "x" * 600 + '": 1}', False),
}
UNANSWERABLE: dict[str, str] = {
    "nested-311": nested(2000),
    "surrogate-reply-to": '{"query": "q", "reply_to": "h/\\ud800"}',
}
OWNED = [
    f"edge-agent/{NODE}/status",
    f"edge-agent/{NODE}/info",
    f"edge-agent/{NODE}/busy",
    f"edge-agent/{NODE}/sensor/cpu",
    f"homeassistant/text/{NODE}/question/config",
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Any:
    directory = tmp_path_factory.mktemp("hostile")
    with (
        broker(directory / "broker") as b,
        node(directory / "d", port=b.port, node=NODE, replies=[final("I cannot tell: still here.")] * 1000) as n,
    ):
        n.wait_link("connected")
        peer = Peer(b.port, subscribe=["h/#", "ok/#"])
        try:
            yield n, peer, b.port
        finally:
            peer.close()


def still_answers(n: Node, peer: Peer, name: str) -> None:
    """After a hostile ask: an ordinary one is answered, and status says the bridge is up."""
    peer.publish(ASK, {"query": "Are you there?"}, properties=v5(f"ok/{name}"))
    reply = json.loads(peer.on_topic(f"ok/{name}", 60).payload)
    assert reply["kind"] == "result" and reply["answer"] == "I cannot tell: still here.", reply
    assert n.status()["mqtt"]["link"] == "connected"


@pytest.mark.parametrize("name", sorted(ANSWERED))
def test_a_hostile_ask_gets_bad_request_and_the_bridge_answers_on(
    hostile: tuple[Node, Peer, int], name: str
) -> None:
    n, peer, _ = hostile
    payload, legacy = ANSWERED[name]
    peer.publish(ASK, payload.encode(), properties=None if legacy else v5(f"h/{name}"))
    reply = json.loads(peer.on_topic(f"h/{name}", 60).payload)
    assert (reply["kind"], reply["code"]) == ("error", "bad_request"), reply
    assert len(reply["message"]) <= 300, reply["message"]
    assert EVIL not in reply["message"] and "\ud800" not in reply["message"]
    still_answers(n, peer, name)


@pytest.mark.parametrize("name", sorted(UNANSWERABLE))
def test_a_hostile_ask_without_a_reply_topic_is_counted(
    hostile: tuple[Node, Peer, int], name: str
) -> None:
    n, peer, _ = hostile
    before = n.status()["mqtt"]["counters"].get("unanswerable", 0)
    peer.publish(ASK, UNANSWERABLE[name].encode())
    wait_for(
        lambda: n.status()["mqtt"]["counters"].get("unanswerable", 0) == before + 1,
        30,
        "counted unanswerable",
    )
    still_answers(n, peer, name)


@pytest.mark.parametrize("topic", OWNED)
def test_no_reply_lands_on_a_topic_the_node_owns(
    hostile: tuple[Node, Peer, int], topic: str
) -> None:
    n, peer, port = hostile
    watcher = Peer(port, subscribe=[topic])
    try:
        watcher.quiet(0.5)  # whatever is retained there arrives first
        before = n.status()["mqtt"]["counters"].get("reply_topic_refused", 0)
        peer.publish(ASK, {"query": "rewrite your entities"}, properties=v5(topic))
        peer.publish(ASK, {"query": "q", "reply_to": topic, "id": 1})
        wait_for(
            lambda: n.status()["mqtt"]["counters"].get("reply_topic_refused", 0) == before + 2,
            30,
            "refused reply topics counted",
        )
        landed = [m for m in watcher.quiet(1.0) if b'"kind"' in m.payload]
        assert not landed, [m.payload[:200] for m in landed]
    finally:
        watcher.close()
    still_answers(n, peer, topic.replace("/", "_"))
    assert "reply topic" in n.output()


def test_refused_topics_are_logged_once(hostile: tuple[Node, Peer, int]) -> None:
    n, _, _ = hostile
    assert n.output().count("refusing to reply on") <= 1


def test_the_node_survived_every_case(hostile: tuple[Node, Peer, int]) -> None:
    n, peer, _ = hostile
    status = n.status()["mqtt"]
    assert status["link"] == "connected" and status["daemon_link"] == "up", status
    assert "Traceback" not in n.output()
    still_answers(n, peer, "last")


# -- any payload, end to end -------------------------------------------------------------------
# Raw JSON text, so that what json.dumps would refuse to write (2,000-deep nesting, lone
# surrogates, integers past 64 bits) still reaches the bridge.
KEYS = [
    "query",
    "workflow",
    "max_iterations",
    "deadline_ms",
    "stream",
    "id",
    "reply_to",
    "v",
    "op",
    "target",
    EVIL + "x" * 300,
]
FRAGMENTS = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.sampled_from(["1" + "0" * 400, "1e400", "-1e400", "0.5", "true", "null", "[]", "{}"]),
    st.integers(min_value=1, max_value=3000).map(nested),
    st.sampled_from([r'"\ud800"', r'"a\udfffb"', '"run"', '"cancel"', '"health"', '"q"']),
    st.text(max_size=30).map(json.dumps),
)
OBJECTS = st.dictionaries(st.sampled_from(KEYS), FRAGMENTS, max_size=5).map(
    lambda fields: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in fields.items()) + "}"
)
PAYLOADS = OBJECTS | st.binary(max_size=200).map(lambda b: b.decode("latin-1"))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(payload=PAYLOADS)
def test_any_payload_gets_exactly_one_stable_final_reply(
    hostile: tuple[Node, Peer, int], payload: str
) -> None:
    """Whatever is published, with a v5 reply topic: one final reply, a result or an error with
    a stable code (never internal), whose message echoes nothing and stays within 300."""
    n, peer, _ = hostile
    topic = f"h/any/{uuid.uuid4().hex}"
    peer.publish(ASK, payload.encode("utf-8", "surrogatepass"), properties=v5(topic))
    message = peer.on_topic(
        topic, 60, payload=lambda p: json.loads(p).get("kind") in ("result", "error")
    )
    reply = json.loads(message.payload)
    if reply["kind"] == "error":
        assert reply["code"] in ERROR_CODES and reply["code"] != "internal", reply
        assert len(reply["message"]) <= 300 and EVIL not in reply["message"], reply
    assert n.status()["mqtt"]["daemon_link"] == "up"
