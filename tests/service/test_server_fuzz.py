"""Hostile input over real sockets: whatever a peer sends, it gets one error or result, the daemon
lives on, and another client's run in flight is answered correctly."""

from __future__ import annotations

import os
import threading
from typing import Any

import msgpack
import zmq
from daemon_harness import Peer, answer, call, run_request, running_server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

INTS = st.integers(min_value=-(2**63), max_value=2**64 - 1)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    INTS,
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.binary(max_size=40),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    ["v", "id", "op", "query", "workflow", "max_iterations", "deadline_ms", "stream", "target", "x"]
)
OPS = st.sampled_from(["run", "status", "skills", "cancel", "RUN", ""])
REQUEST_LIKE = st.fixed_dictionaries(
    {"v": st.sampled_from([1, 1, 1, 2, 0, "1", True, 1.0]), "op": OPS},
    optional={
        "id": st.one_of(st.text(max_size=130), INTS, st.none()),
        "query": st.one_of(st.text(max_size=200), VALUES),
        "workflow": st.one_of(st.none(), st.text(max_size=10), VALUES),
        "max_iterations": st.one_of(INTS, VALUES),
        "deadline_ms": st.one_of(st.floats(), INTS, VALUES),
        "stream": st.one_of(st.booleans(), VALUES),
        "target": st.one_of(st.text(max_size=10), VALUES),
    },
)
PAYLOADS = st.one_of(
    st.binary(max_size=300),
    REQUEST_LIKE.map(lambda d: msgpack.packb(d, use_bin_type=True)),
    st.dictionaries(st.one_of(KEYS, INTS, st.binary(max_size=4)), VALUES, max_size=8).map(
        lambda d: msgpack.packb(d, use_bin_type=True, strict_types=False)
    ),
    VALUES.map(lambda v: msgpack.packb(v, use_bin_type=True)),
)
BYSTANDER = "bystander-run-0001"
MESSAGES = st.lists(PAYLOADS, min_size=1, max_size=3)


def test_no_input_kills_hangs_or_disturbs_the_daemon() -> None:
    context: zmq.Context[Any] = zmq.Context()
    replies = [call("add", a=1, b=2), {"text": answer("3"), "delay_s": 0.001}] * 500
    config = "[daemon]\nqueue_limit = 1000\nmax_request_bytes = 4096\n"
    with running_server(replies, config=config) as (server, endpoint):
        bystander = Peer(context, endpoint)
        attacker = Peer(context, endpoint)
        req_attacker = Peer(context, endpoint)
        try:

            @settings(
                max_examples=150,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            )
            @given(frames=MESSAGES, req_envelope=st.booleans())
            def one_exchange(frames: list[bytes], req_envelope: bool) -> None:
                bystander.send(run_request("Add one and two.", id=BYSTANDER))
                peer = req_attacker if req_envelope else attacker
                peer.socket.send_multipart(([b""] if req_envelope else []) + frames)
                replies = peer.until_final(10)
                final = replies[-1]
                assert all(r["v"] == 1 for r in replies)
                assert [r["kind"] for r in replies[:-1]] in ([], ["accepted"]) or (
                    replies[0]["kind"] == "accepted"
                    and {r["kind"] for r in replies[1:-1]} == {"event"}
                )
                assert final["kind"] in ("result", "error")
                if final["kind"] == "error":
                    assert final["code"] in (
                        "bad_request",
                        "too_large",
                        "unsupported_version",
                        "deadline",
                    ), final
                    assert final["id"] is None or isinstance(final["id"], str)
                assert peer.silent(0.01)
                result = bystander.recv(10)
                assert result["id"] == BYSTANDER and result["answer"] == "3", result
                assert bystander.silent(0.001)

            bystander.send(run_request("Add one and two.", id=BYSTANDER))
            assert bystander.recv(10)["answer"] == "3"
            fds_before, threads_before = len(os.listdir("/proc/self/fd")), threading.active_count()
            one_exchange()
            # Nothing leaks per request: no file descriptors, no threads.
            assert len(os.listdir("/proc/self/fd")) <= fds_before + 4
            assert threading.active_count() == threads_before
            status = server.status()
            assert status["state"] in ("ready", "busy")
            assert status["counters"]["errors"] > 0
        finally:
            for peer in (bystander, attacker, req_attacker):
                peer.close()
    context.destroy(linger=0)
