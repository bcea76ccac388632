"""The soak's MQTT side: a real Mosquitto, and clients that ask over the public topics only.

Only what docs/mqtt.md promises is used: asks on ``<prefix>/<node>/ask`` with ``reply_to`` and
``id`` in the payload (MQTT 3.1.1 style), each answered with exactly one final reply (``result``
or ``error``) on the reply topic. One ask in five is a bad one (a wrongly typed field), which
must be answered ``bad_request``, still exactly once.
"""

from __future__ import annotations

import json
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scripts.testbed.mosquitto import Broker, Peer, broker

PREFIX = "edge-agent"
NODE = "soak-node"
REPLY_WAIT_S = 60.0


def mqtt_section(port: int) -> str:
    """The daemon's ``[mqtt]`` section for a broker on 127.0.0.1:``port``."""
    return (
        f'[mqtt]\nhost = "127.0.0.1"\nport = {port}\nnode_id = "{NODE}"\n'
        f'topic_prefix = "{PREFIX}"\ndiscovery = false\n'
    )


@contextmanager
def mosquitto(directory: Path) -> Iterator[Broker]:
    with broker(directory) as running:
        yield running


def bad_ask(rng: random.Random) -> dict[str, Any]:
    return rng.choice(
        [
            {"query": "q", "max_iterations": "three"},
            {"query": "", "deadline_ms": 1000},
            {"query": "q", "zz_unknown": 1},
            {"query": "q", "stream": "yes"},
        ]
    )


def mqtt_client(
    port: int,
    stop: threading.Event,
    tally: Any,
    seed: int,
    *,
    on_answer: Callable[[], None] | None = None,
    gone: threading.Event | None = None,
) -> None:
    """Ask, one at a time, until ``stop``; count the final replies to each ask's id.

    ``on_answer`` is called for each well-formed ask that got its final reply; once ``gone`` is
    set (the daemon is gone) no reply is waited for."""
    gone = gone or threading.Event()
    rng = random.Random(seed)
    reply_topic = f"soak/replies/{uuid.uuid4().hex[:12]}"
    peer = Peer(port, v5=False, subscribe=[reply_topic])
    try:
        while not stop.is_set():
            rid = uuid.uuid4().hex
            well_formed = rng.random() >= 0.2
            ask: dict[str, Any] = (
                {"query": "how warm is the kitchen?"} if well_formed else bad_ask(rng)
            )
            ask.update(reply_to=reply_topic, id=rid, stream=ask.get("stream", rng.random() < 0.3))
            with tally.lock:
                tally.sent[rid] += 1
            peer.publish(f"{PREFIX}/{NODE}/ask", ask)
            until = time.monotonic() + REPLY_WAIT_S
            answered = False
            while (left := until - time.monotonic()) > 0 and not gone.is_set():
                if answered := _final(peer, tally, rid, min(left, 1.0)):
                    break
            if answered and well_formed and on_answer is not None:
                on_answer()
        # A second final reply to anything, arriving late, is counted too.
        while _final(peer, tally, None, 1.0):
            pass
    finally:
        peer.close()


def _final(peer: Peer, tally: Any, rid: str | None, timeout: float) -> bool:
    """Read one message; True when it was the final reply to ``rid`` (or, with None, any)."""
    try:
        message = peer.next(timeout)
    except queue.Empty:
        return False
    try:
        reply = json.loads(message.payload)
    except ValueError:
        with tally.lock:
            tally.kinds["unparseable"] += 1
        return False
    if reply.get("kind") not in ("result", "error"):
        return False
    with tally.lock:
        tally.finals[str(reply.get("id"))] += 1
        tally.kinds[f"{reply['kind']}:{reply.get('code', reply.get('op'))}"] += 1
    return rid is None or reply.get("id") == rid


__all__ = ["NODE", "PREFIX", "mosquitto", "mqtt_client", "mqtt_section"]
