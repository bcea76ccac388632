"""A daemon in this process with a journal file of the test's own, skills that count their calls
or hang until released, and a raw peer to ask it (tests/test_journal_*.py)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import zmq
from daemon_harness import Peer, answer, call, running_server

from edge_agentd.agent.registry import Registry
from edge_agentd.service.config.settings import JournalSettings
from edge_agentd.service.journal.keeper import Journal
from edge_agentd.service.server import Server

# The tests ask "how warm is it?" of skills that say nothing of it: answers that cannot tell,
# which grounding always takes (docs/design.md, "Grounding"); the journal is what they test.
COUNTED = "I cannot tell: counted."
HANGED = "I cannot tell: done hanging."
SCRIPT = [call("count"), answer(COUNTED)]
HANG = [call("hang"), answer(HANGED)]


class Counting:
    """A registry whose ``count`` skill counts its calls, and whose ``hang`` waits for release."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self.registry = Registry()

        @self.registry.skill(timeout=None)
        def count() -> int:
            """Count one more call."""
            self.calls += 1
            return self.calls

        @self.registry.skill(timeout=None)
        def hang() -> str:
            """Return only once released."""
            self.calls += 1
            self.entered.set()
            self.release.wait(30)
            return "released"


@contextlib.contextmanager
def daemon(
    tmp_path: Path, script: list[str], config: str = "", path: Path | None = None
) -> Iterator[tuple[Server, str, Counting, Peer]]:
    skills = Counting()
    journal = path or tmp_path / "journal.sqlite3"
    config = f"[journal]\npath = '{journal}'\n{config}"
    context: zmq.Context[Any] = zmq.Context()
    try:
        with running_server(list(script), config=config, registry=skills.registry) as (
            server,
            endpoint,
        ):
            peer = Peer(context, endpoint)
            try:
                yield server, endpoint, skills, peer
            finally:
                skills.release.set()
                peer.close()
    finally:
        context.destroy(linger=0)


def ask(peer: Peer, request: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Send ``request`` and return its reply, passing over replies to earlier requests."""
    peer.send(request)
    while True:
        reply = peer.recv(timeout)
        reply.pop("_frames", None)
        if reply["id"] in (request["id"], None):
            return reply


def result(peer: Peer, target: str) -> dict[str, Any]:
    return ask(peer, {"v": 1, "id": f"result-{target}", "op": "result", "target": target})


# -- the journal alone, on a file of the test's own ------------------------------------------


def payload(run_id: str, answer: str = "21 C") -> bytes:
    """A run's packed ``result`` reply, as the daemon sends it."""
    events = [{"type": "FinalAnswerAction", "answer": answer, "thought": None, "raw": "{}"}]
    packed: bytes = msgpack.packb(
        {
            "v": 1,
            "id": run_id,
            "kind": "result",
            "op": "run",
            "workflow": None,
            "timing": {"queued_ms": 0.1, "run_ms": 2.0},
            "outcome": "answered",
            "answer": answer,
            "state": {"query": "how warm?", "events": events},
            "run_id": run_id,
        }
    )
    return packed


class Sent:
    """Stands in for the serving loop: runs what the journal posts, records what it sends."""

    def __init__(self) -> None:
        self.replies: list[tuple[list[bytes], dict[str, Any]]] = []

    def post(self, call: Callable[[], None]) -> None:
        call()

    def send(self, envelope: list[bytes], data: bytes, connection: Any) -> None:
        self.replies.append((envelope, msgpack.unpackb(data)))


@contextlib.contextmanager
def journal_at(path: Path, **settings: Any) -> Iterator[Journal]:
    sent = Sent()
    journal = Journal(JournalSettings(**settings), post=sent.post, send=sent.send, path=path)
    try:
        yield journal
    finally:
        journal.close()


def record(journal: Journal, run_id: str, *, key: str | None = None, answer: str = "21 C") -> None:
    journal.queued(run_id, source="zmq", query="how warm?", key=key)
    journal.started(run_id)
    journal.finished(run_id, payload(run_id, answer), outcome="answered", answer=answer)
