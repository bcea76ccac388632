"""Daemons with the MQTT bridge on, as real processes, against a real Mosquitto (scripts/testbed/mosquitto.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import zmq

from scripts.testbed.mosquitto import wait_for

REPO = Path(__file__).resolve().parent.parent


def final(text: str) -> str:
    return json.dumps({"final_answer": text})


class Node:
    """``edge-agent serve --model mock:FILE --config FILE`` with an ``[mqtt]`` section (or another
    ``model``: a GGUF's path)."""

    def __init__(
        self,
        directory: Path,
        *,
        port: int,
        node: str,
        replies: list[Any] | None = None,
        mqtt: str = "",
        daemon: str = "",
        extra: str = "",
        log_level: str = "INFO",
        env: dict[str, str] | None = None,
        model: str | None = None,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.node = node
        self.mock = directory / "mock.json"
        self.mock.write_text(json.dumps(replies if replies is not None else [final("I cannot tell: fine.")]))
        self.endpoint = f"ipc://{directory / 'agent.sock'}"
        self.config = directory / "edge.toml"
        self.config.write_text(
            f"[daemon]\n{daemon}\n"
            f'[mqtt]\nhost = "127.0.0.1"\nport = {port}\nnode_id = "{node}"\n'
            f"sensor_interval_s = 5.0\n{mqtt}\n{extra}\n"
        )
        self.log = directory / "daemon.log"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "edge_agentd.cli",
                "serve",
                "--model",
                model or f"mock:{self.mock}",
                "--endpoint",
                self.endpoint,
                "--config",
                str(self.config),
                "--log-level",
                log_level,
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        self.context: zmq.Context[Any] = zmq.Context()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def request(self, message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        sock = self.context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.endpoint)
        try:
            sock.send(msgpack.packb(message))
            until = time.monotonic() + timeout
            while (left := until - time.monotonic()) > 0:
                if not sock.poll(int(left * 1000)):
                    break
                reply: dict[str, Any] = msgpack.unpackb(sock.recv())
                if reply["kind"] in ("result", "error"):
                    return reply
            raise TimeoutError("no reply from the daemon")
        finally:
            sock.close(linger=0)

    def status(self) -> dict[str, Any]:
        return self.request({"v": 1, "id": "st", "op": "status"}, timeout=5)

    def wait_ready(self, timeout: float = 60.0) -> None:
        def ready() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"the daemon exited {self.process.returncode}:\n{self.output()}")
            if not Path(self.endpoint[len("ipc://") :]).exists():
                return False
            with contextlib.suppress(TimeoutError):
                return self.status().get("state") == "ready"
            return False

        wait_for(ready, timeout, "daemon ready")

    def wait_link(self, link: str, timeout: float = 60.0) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        def linked() -> bool:
            nonlocal seen
            seen = self.status().get("mqtt") or {}
            return seen.get("link") == link

        wait_for(linked, timeout, f"mqtt link {link} (last: {seen})")
        return seen

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.context.destroy(linger=0)
        return self.process.returncode


@contextlib.contextmanager
def node(directory: Path, **options: Any) -> Iterator[Node]:
    n = Node(directory, **options)
    try:
        n.wait_ready()
        yield n
    finally:
        n.stop()


class Relay:
    """A TCP relay in front of the broker that a test can cut: the daemon's bridge connects here
    while requesters connect to the broker itself, so cutting the relay drops the bridge's link
    alone (the broker, and every requester's session, stay up).

    :meth:`cut` closes every relayed connection and refuses new ones (each is closed as soon as
    it is accepted) until :meth:`mend`."""

    def __init__(self, broker_port: int) -> None:
        self.broker_port = broker_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._up = True
        self._open: list[socket.socket] = []
        self.accepted = 0
        """Connections relayed to the broker so far (a reconnect adds one)."""
        threading.Thread(target=self._accept, name="relay", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                inside, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                up = self._up
            if not up:
                inside.close()
                continue
            outside = socket.create_connection(("127.0.0.1", self.broker_port), timeout=10)
            outside.settimeout(None)
            with self._lock:
                self._open += [inside, outside]
                self.accepted += 1
            for a, b in ((inside, outside), (outside, inside)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self._lock:
            self._up = False
            cut, self._open = self._open, []
        for s in cut:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def mend(self) -> None:
        with self._lock:
            self._up = True

    def close(self) -> None:
        self._listener.close()
        self.cut()
