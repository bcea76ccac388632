"""Issue 11: what a hostile local client could do to the daemon's socket, reproduced first.

- Defect 2 (a flood of idle connections ran libzmq out of fds): tests/service/test_hardening_connections.py.
- Defect 3: error replies echoed the offending input, so one client that never read could make
  the daemon hold a copy of everything it sent.
- Defect 7: a peer that took a departed client's routing id received that client's result; and a
  peer that took the routing id libzmq was about to give the next client made libzmq abort.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from daemon_harness import (
    ANSWER,
    QUICK_STOP,
    Peer,
    run_request,
    running_server,
    start_daemon,
    stop_daemon,
    wait_for,
    wait_ready,
    write_mock,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd.protocol.wire import PROTOCOL, WireError, decode_request
from edge_agentd.service.replies import MAX_MESSAGE_CHARS


def status_of(context: zmq.Context[Any], endpoint: str, timeout: float = 30.0) -> dict[str, Any]:
    """One well-behaved client's ``status``, on a fresh connection."""
    peer = Peer(context, endpoint)
    try:
        peer.send({"v": 1, "id": "well-behaved", "op": "status"})
        return peer.recv(timeout)
    finally:
        peer.close()


# -- defect 3: no echo, bounded replies --------------------------------------------------------

BIG_KEY = "k" * 60_000


@pytest.mark.parametrize(
    "request_map",
    [
        {"v": 1, "id": "r1", "op": "status", BIG_KEY: 1},
        {"v": 1, "id": "r1", "op": "run", "query": "q", "workflow": BIG_KEY[:120]},
        {"v": 1, "id": "r1", "op": BIG_KEY},
        {"v": BIG_KEY, "id": "r1", "op": "status"},
        {"v": 1, "id": "r1", "op": "run", "query": "q", "max_iterations": BIG_KEY},
    ],
    ids=["unknown-key", "unknown-workflow", "op", "version", "value"],
)
def test_an_error_reply_never_echoes_the_request(
    context: zmq.Context[Any], request_map: dict[str, Any]
) -> None:
    with running_server(config="[daemon]\nmax_request_bytes = 131072\n") as (_, endpoint):
        peer = Peer(context, endpoint)
        try:
            peer.send(request_map)
            reply = peer.recv(30)
        finally:
            peer.close()
    assert reply["kind"] == "error"
    assert reply["code"] in ("bad_request", "unsupported_version")
    assert "kkkkkkkk" not in reply["message"]
    assert len(msgpack.packb(reply)) < 2 * MAX_MESSAGE_CHARS


NOT_IN_ANY_MESSAGE = "QXZJ_0123456789"


@settings(max_examples=200, deadline=None)
@given(
    key=st.text(alphabet=NOT_IN_ANY_MESSAGE, min_size=6, max_size=200),
    value=st.text(alphabet=NOT_IN_ANY_MESSAGE, min_size=6, max_size=200),
    field=st.sampled_from(["v", "op", "query", "workflow", "max_iterations", "target"]),
    op=st.sampled_from(sorted(PROTOCOL)),
)
def test_no_wire_error_repeats_a_key_or_value_it_was_sent(
    key: str, value: str, field: str, op: str
) -> None:
    """An unknown key, and a wrong value in any field, come back as the schema's words only."""
    request: dict[str, Any] = {"v": 1, "id": "r1", "op": op, "query": "q"}
    limits = {"max_bytes": 1 << 20, "max_query_chars": 4000}
    with pytest.raises(WireError) as unknown:
        decode_request(msgpack.packb({**request, key: 1}), **limits)
    assert key not in unknown.value.message, unknown.value.message
    try:
        decode_request(msgpack.packb({**request, field: value}), **limits)
    except WireError as exc:
        assert value not in exc.message, exc.message


def test_a_client_that_never_reads_cannot_stop_the_daemon_answering(
    context: zmq.Context[Any],
) -> None:
    with running_server(config="[daemon]\nmax_request_bytes = 131072\n") as (server, endpoint):
        hostile = context.socket(zmq.DEALER)
        hostile.setsockopt(zmq.LINGER, 0)
        hostile.setsockopt(zmq.SNDHWM, 0)
        hostile.setsockopt(zmq.RCVHWM, 1)  # and it never reads
        hostile.connect(endpoint)
        frame = msgpack.packb({"v": 1, "id": "x", "op": "status", BIG_KEY: 1})
        try:
            for _ in range(600):
                hostile.send(frame)
            wait_for(lambda: server.status()["counters"]["requests"] >= 600, 120)
            assert status_of(context, endpoint)["state"] == "ready"
            # Every bad frame got its short reply (sent, or dropped once the client's queue was
            # full); none was left unanswered.
            assert server.status()["counters"]["errors_by_code"]["bad_request"] >= 600
        finally:
            hostile.close(linger=0)


# -- defect 7: routing ids ---------------------------------------------------------------------


def test_a_peer_that_takes_a_departed_clients_routing_id_never_gets_its_result(
    context: zmq.Context[Any],
) -> None:
    with running_server([{"text": ANSWER, "delay_s": 1.0}], config=QUICK_STOP) as (
        server,
        endpoint,
    ):
        # The departed client chose its routing id: its run is refused, so there is no result
        # to take over.
        chosen = context.socket(zmq.DEALER)
        chosen.setsockopt(zmq.LINGER, 0)
        chosen.setsockopt(zmq.ROUTING_ID, b"client-7")
        chosen.connect(endpoint)
        chosen.send(msgpack.packb(run_request("my private question", id="private")))
        assert chosen.poll(30_000)
        refused = msgpack.unpackb(chosen.recv())
        assert (refused["kind"], refused["code"], refused["id"]) == ("error", "bad_request", None)
        assert "ZMQ_ROUTING_ID" in refused["message"]
        chosen.close(linger=0)
        assert server.status()["counters"].get("runs_accepted", 0) == 0

        # A client with the routing id the ROUTER gave it leaves mid-run; a peer that takes that
        # very id (learned here from the daemon's inside; a real one would have to guess 32
        # random bits) is not sent the result.
        victim = Peer(context, endpoint)
        victim.send(run_request("my private question", id="victim-run"))
        wait_for(lambda: server.runs.running is not None, 30)
        routing_id = server.runs.running.envelope[0]
        victim.close()
        wait_for(lambda: not server._router.connections.alive(server.runs.running.connection), 30)
        thief = context.socket(zmq.DEALER)
        thief.setsockopt(zmq.LINGER, 0)
        thief.setsockopt(zmq.ROUTING_ID, routing_id)
        thief.connect(endpoint)
        try:
            wait_for(lambda: server.status()["counters"].get("runs_finished", 0) == 1, 30)
            assert not thief.poll(500)
            assert server.status()["counters"]["replies_dropped"] >= 1
        finally:
            thief.close(linger=0)


def test_a_peer_cannot_take_the_routing_id_of_the_next_client(
    tmp_path: Path, context: zmq.Context[Any]
) -> None:
    # libzmq numbers the peers that choose no routing id from rand(), which nobody seeded: the
    # first was always 0x006b8b4567. Peers that took the next numbers made libzmq abort as soon
    # as the next client was given one of them ("Assertion failed: ok (src/socket_base.cpp)").
    mock = write_mock(tmp_path / "mock.json", [ANSWER])
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    process = start_daemon(["--model", f"mock:{mock}", "--endpoint", endpoint])
    squatters = []
    try:
        wait_ready(endpoint, process)
        for n in range(64):
            squatter = context.socket(zmq.DEALER)
            squatter.setsockopt(zmq.LINGER, 0)
            squatter.setsockopt(zmq.ROUTING_ID, b"\0" + struct.pack(">I", 0x6B8B4567 + n))
            squatter.connect(endpoint)
            squatter.send(msgpack.packb({"v": 1, "id": f"q{n}", "op": "status"}))
            squatters.append(squatter)
        for squatter in squatters:  # each is connected and known to the daemon
            assert squatter.poll(30_000)
        for n in range(8):
            assert status_of(context, endpoint)["state"] == "ready", n
        assert process.poll() is None
    finally:
        for squatter in squatters:
            squatter.close(linger=0)
        output = stop_daemon(process)
    assert process.returncode == 0, output


def test_a_zmtp_1_peer_that_cannot_be_told_apart_is_refused() -> None:
    # ZMTP 1.0 (ZeroMQ 2, or random bytes that happen to read as its greeting): libzmq keeps no
    # fd on its messages, so the daemon could not tell which connection a run came from.
    with running_server(config=QUICK_STOP) as (server, endpoint):
        host, port = endpoint[len("tcp://") :].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as raw:
            payload = msgpack.packb(run_request(id="old-peer"))
            assert len(payload) < 254
            # An empty identity, then one frame: [length incl. flags][flags][body].
            raw.sendall(b"\x01\x00" + bytes([len(payload) + 1, 0]) + payload)
            reply = b""
            while b"ZMTP 1.0" not in reply:
                chunk = raw.recv(4096)
                assert chunk, "the daemon closed the connection without a reply"
                reply += chunk
        # After the daemon's greeting, the reply frame: an error map of five fields.
        unpacker = msgpack.Unpacker(raw=False)
        unpacker.feed(reply[reply.index(b"\x85\xa1v") :])
        answer = next(unpacker)
        assert (answer["kind"], answer["code"]) == ("error", "bad_request")
        assert "ZMTP 1.0" in answer["message"]
        assert server.status()["counters"].get("runs_accepted", 0) == 0
