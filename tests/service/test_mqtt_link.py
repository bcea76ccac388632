"""The bridge's link to the daemon under supervision: a link that cannot run is restarted, then
reported ``failed``, and every ask still gets exactly one reply (docs/mqtt.md, *Reliability*).

No broker is needed: the link is driven in-process, as the bridge drives it. The failure is real:
an endpoint the ZeroMQ client refuses, so each start of the link's thread fails.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from edge_agentd.protocol.mqttwire import Ask
from edge_agentd.service.mqtt.askkeys import journal_key, with_journal_key
from edge_agentd.service.mqtt.daemonlink import MAX_RESTARTS, WAITING_LIMIT, DaemonLink, Pending
from edge_agentd.service.mqtt.state import BridgeState


def wait_until(condition: Any, timeout: float = 60.0) -> None:
    until = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > until:
            raise TimeoutError("condition not met")
        time.sleep(0.02)


def test_a_link_that_keeps_failing_is_reported_failed_and_still_answers() -> None:
    state = BridgeState()
    finals: list[tuple[Pending, dict[str, Any]]] = []
    lock = threading.Lock()

    def on_final(pending: Pending, reply: dict[str, Any]) -> None:
        with lock:
            finals.append((pending, reply))

    link = DaemonLink(
        state,
        on_final=on_final,
        on_progress=on_final,
        on_daemon_status=lambda reply: None,
        on_started=lambda: None,
        backoff_s=0.01,
    )
    link.start("not-an-endpoint")
    try:
        wait_until(lambda: state.snapshot()["daemon_link"] == "failed")
        snapshot = state.snapshot()
        assert snapshot["link"] == "failed"  # never "connected" while nothing can be answered
        assert "BadEndpoint" in snapshot["last_problem"]
        assert snapshot["counters"]["link_failures"] == MAX_RESTARTS + 1
        asks = [Pending(f"r/{i}", i, None) for i in range(3)]
        for pending in asks:
            assert link.enqueue(
                Ask(pending.reply_to or "", pending.request_id, {"query": "q"}), pending
            )
        wait_until(lambda: len(finals) == 3)
        assert sorted(p.request_id for p, _ in finals) == [0, 1, 2]  # one reply each
        assert {r["code"] for _, r in finals} == {"internal"}
        assert link.waiting() == 0
    finally:
        link.stop(5.0)


def test_the_waiting_bound_holds() -> None:
    state = BridgeState()
    link = DaemonLink(
        state,
        on_final=lambda p, r: None,
        on_progress=lambda p, r: None,
        on_daemon_status=lambda reply: None,
        on_started=lambda: None,
    )  # not started: nothing leaves the inbox
    taken = [
        link.enqueue(Ask("r/x", i, {"query": "q"}), Pending("r/x", i, None))
        for i in range(WAITING_LIMIT + 5)
    ]
    assert taken == [True] * WAITING_LIMIT + [False] * 5
    assert link.waiting() == WAITING_LIMIT
    link.stop(1.0)


def test_the_journal_key_names_one_ask_of_one_requester() -> None:
    key = journal_key("r/1", None, b"\x00corr")
    assert key is not None and key == journal_key("r/1", "other id", b"\x00corr")
    assert key != journal_key("r/2", None, b"\x00corr")  # another requester's
    assert journal_key("r/1", 7, None) != journal_key("r/1", "7", None)
    assert journal_key("r/1", None, None) is None  # nothing identifies it: never deduplicated
    assert len(key) <= 128 and key.isprintable()
    assert with_journal_key({"query": "q"}, "r/1", 7, None) == {
        "query": "q",
        "key": journal_key("r/1", 7, None),
        "source": "mqtt",  # journaled as asked over MQTT, not as the bridge's ZeroMQ connection
    }
    assert with_journal_key({"query": "q", "key": "mine"}, "r/1", 7, None)["key"] == "mine"
    assert with_journal_key({"query": "q"}, "r/1", None, None) == {"query": "q", "source": "mqtt"}
