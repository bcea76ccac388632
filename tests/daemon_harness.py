"""Real daemons for the daemon tests: a Server in a thread on a random loopback port, or a process.

Every helper cleans up what it starts: sockets are closed with linger 0, threads are joined and
processes are stopped and waited for.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import zmq

from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.agent.registry import Registry
from edge_agentd.agent.workflow import Workflow
from edge_agentd.model.scripted import MockModel
from edge_agentd.service.config.settings import Settings, parse_settings
from edge_agentd.service.options import ServerOptions
from edge_agentd.service.server import Server
from edge_agentd.service.systemd import Notifier
from scripts.testbed.serve_command import edge_agent_command

QUICK_STOP = "[daemon]\nshutdown_grace_s = 0.05\n"
"""A config that lets a stopping daemon give its runs 50 ms, not the default grace."""

ANSWER = '{"final_answer": "I cannot tell how warm the kitchen is."}'
REPO = Path(__file__).resolve().parent.parent


def answer(text: str) -> str:
    return json.dumps({"final_answer": text})


def call(skill: str, **arguments: Any) -> str:
    return json.dumps({"skill_name": skill, "arguments": arguments})


def sample_registry() -> Registry:
    registry = Registry()

    @registry.skill
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @registry.skill(timeout=5)
    def room_temperature(room: str) -> dict[str, Any]:
        """The temperature of a room in °C."""
        return {"room": room, "celsius": 21.0}

    return registry


def hanging_registry(release: threading.Event, entered: threading.Event) -> Registry:
    """One skill, ``hang``, with no timeout: it sets ``entered`` and returns only on ``release``."""
    registry = Registry()

    @registry.skill(timeout=None)
    def hang() -> str:
        """Never returns until the test ends, and has no timeout."""
        entered.set()
        release.wait(60)
        return "late"

    return registry


@contextlib.contextmanager
def running_server(
    replies: list[str | dict[str, Any]] | None = None,
    *,
    config: str = "",
    load: Callable[[], ModelHandle] | None = None,
    workflows: dict[str, Workflow] | None = None,
    registry: Registry | None = None,
    wait_ready: bool = True,
) -> Iterator[tuple[Server, str]]:
    """A Server serving in a thread on tcp://127.0.0.1:<random>, stopped and joined on exit."""
    settings: Settings = parse_settings(config)
    if load is None:
        model = MockModel(replies if replies is not None else [ANSWER])
        load = lambda: model  # noqa: E731
    server = Server(
        settings,
        ServerOptions(
            endpoints=["tcp://127.0.0.1:*"],
            load_model=load,
            model_spec="mock:test",
            registry=registry or sample_registry(),
            workflows=workflows or {},
            notifier=Notifier({}),
        ),
    )
    endpoint = server.bind()[0]
    exit_codes: list[int] = []
    thread = threading.Thread(target=lambda: exit_codes.append(server.serve()), daemon=True)
    thread.start()
    try:
        if wait_ready:
            wait_for(lambda: server.lifecycle.phase != "loading", 10)
        yield server, endpoint
    finally:
        server.stop()
        thread.join(30)
        assert not thread.is_alive(), "the serving loop did not stop"


def wait_for(condition: Callable[[], bool], timeout: float) -> None:
    until = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > until:
            raise TimeoutError("condition not met in time")
        time.sleep(0.005)


class Peer:
    """A raw ZeroMQ client socket (REQ or DEALER) speaking msgpack, for tests at the wire level."""

    def __init__(self, context: zmq.Context[Any], endpoint: str, kind: int = zmq.DEALER) -> None:
        self.socket = context.socket(kind)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(endpoint)

    def send(self, message: dict[str, Any] | bytes, *, req_envelope: bool = False) -> None:
        payload = message if isinstance(message, bytes) else msgpack.packb(message)
        if req_envelope:
            self.socket.send_multipart([b"", payload])
        else:
            self.socket.send(payload)

    def recv(self, timeout: float = 5.0) -> dict[str, Any]:
        if not self.socket.poll(int(timeout * 1000)):
            raise TimeoutError("no reply")
        frames = self.socket.recv_multipart()
        reply: dict[str, Any] = msgpack.unpackb(frames[-1])
        reply["_frames"] = len(frames)
        return reply

    def silent(self, timeout: float = 0.2) -> bool:
        return not self.socket.poll(int(timeout * 1000))

    def until_final(self, timeout: float = 10.0) -> list[dict[str, Any]]:
        replies = [self.recv(timeout)]
        while replies[-1]["kind"] in ("accepted", "event"):
            replies.append(self.recv(timeout))
        return replies

    def close(self) -> None:
        self.socket.close(linger=0)


def run_request(query: str = "how warm is it?", **fields: Any) -> dict[str, Any]:
    return {"v": 1, "id": fields.pop("id", uuid.uuid4().hex), "op": "run", "query": query, **fields}


# -- daemon processes -------------------------------------------------------------------------


def write_mock(path: Path, replies: list[str | dict[str, Any]]) -> Path:
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


def start_daemon(
    args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        edge_agent_command("serve", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def wait_ready(endpoint: str, process: subprocess.Popen[str], timeout: float = 30.0) -> None:
    """Poll ``status`` until the daemon says ready; fail early if the process died."""
    context: zmq.Context[Any] = zmq.Context()
    try:
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            if process.poll() is not None:
                output = process.stdout.read() if process.stdout else ""
                raise RuntimeError(f"the daemon exited with {process.returncode}:\n{output}")
            if endpoint.startswith("ipc://") and not Path(endpoint[6:]).exists():
                time.sleep(0.02)
                continue
            peer = Peer(context, endpoint)
            try:
                peer.send({"v": 1, "id": "ready?", "op": "status"})
                with contextlib.suppress(TimeoutError):
                    if peer.recv(0.5).get("state") == "ready":
                        return
            finally:
                peer.close()
        raise TimeoutError("the daemon did not become ready")
    finally:
        context.destroy(linger=0)


def stop_daemon(process: subprocess.Popen[str], timeout: float = 20.0) -> str:
    """SIGTERM the daemon, wait for it, and return its output."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        raise
    return output or ""
