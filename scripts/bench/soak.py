"""Soak the daemon with hostile and normal traffic; check it stays flat and answers every request.

Three parts, each against a real ``edge-agent serve`` process with a scripted model on an ipc
socket (the socket systemd gives it):

- ``flood``: the daemon runs with RLIMIT_NOFILE 1024 (systemd's default) and ``--flood``
  connections (default 1,020, the issue's figure) are opened and left idle. Reports whether it
  survived, what it answered meanwhile, and its fds.
- ``non-reader``: one client sends ``--frames`` bad 60 KB frames (default 12,000) and never reads
  a reply. Reports the daemon's RSS before, at the peak and after the client left. Then twenty
  clients ask for the skill list 2,000 times each and never read: the RSS each costs.
- ``soak``: ``--seconds`` (default 600) of mixed traffic. ``--clients`` (24) normal clients, more
  than the daemon's ``--cap`` (max_connections, 16), send runs, ``status`` and ``skills`` on
  their own sockets, back off on ``busy``, and count the final replies to each request; with
  ``--mqtt N``, N clients ask through a real Mosquitto (soak_mqtt.py) and count theirs. Meanwhile
  hostile clients flood idle connections, send garbage bytes, bad and deeply nested frames from a
  socket that never reads, choose their own routing ids, abandon runs mid-way and try to cancel
  other clients' runs. RSS, fds and threads are read before and, once the traffic has stopped and
  the daemon settled, after.

Exit status 0 when the daemon survived, answered every normal request exactly once, and its fds
and threads came back to where they were and its RSS within ``--rss-slack-mib`` (default 20);
else 1. ``--json`` prints the figures as one JSON object.

To compare with another tree, run it with that tree first on PYTHONPATH (with an ``edge_agentd``
link to its ``daemon/``): the daemon is started with this interpreter and ``-m edge_agentd.cli``.

Usage: python -m scripts.bench.soak [--seconds 600] [--only soak|flood|non-reader] [--mqtt 2]
       [--clients 24] [--cap 16] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import zmq

ANSWER = json.dumps({"final_answer": "It is 21 C in the kitchen."})
BIG_KEY = "k" * 60_000
SKILLS_CLIENTS = 20
SKILLS_REQUESTS = 2000
SETTLE_S = 20.0
"""After the traffic, how long the fds and threads may take to come back (libzmq closes what it
closes on its own I/O thread)."""


# -- the daemon -------------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, int]:
    """RSS (KiB), threads and fds of a process, from /proc."""
    figures = {"fds": len(os.listdir(f"/proc/{pid}/fd"))}
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition(":")
        if key == "VmRSS":
            figures["rss_kib"] = int(value.split()[0])
        elif key == "Threads":
            figures["threads"] = int(value)
    return figures


@dataclass
class Daemon:
    process: subprocess.Popen[str]
    endpoint: str
    path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def figures(self) -> dict[str, int]:
        return proc_status(self.pid)


@contextlib.contextmanager
def daemon(
    workdir: Path,
    *,
    replies: int,
    delay_s: float = 0.0,
    fd_limit: int | None = None,
    builtins: bool = False,
    daemon_config: str = "",
    endpoint: str | None = None,
    sections: str = "",
) -> Iterator[Daemon]:
    """``edge-agent serve`` with a scripted model of ``replies`` answers, ready; SIGTERM after."""
    script = workdir / "mock.json"
    reply: Any = {"text": ANSWER, "delay_s": delay_s} if delay_s else ANSWER
    script.write_text(json.dumps([reply] * replies), encoding="utf-8")
    config = workdir / "config.toml"
    config.write_text(
        f"[daemon]\n{daemon_config}\n[skills]\nbuiltins = {str(builtins).lower()}\n{sections}",
        encoding="utf-8",
    )
    sock = workdir / "agent.sock"
    endpoint = endpoint or f"ipc://{sock}"
    command = [sys.executable, "-m", "edge_agentd.cli", "serve", "--model", f"mock:{script}"]
    command += ["--config", str(config), "--endpoint", endpoint]
    if fd_limit is not None:
        setup = (
            "import os, resource, sys; n = int(sys.argv[1]);"
            " resource.setrlimit(resource.RLIMIT_NOFILE, (n, n));"
            " os.execv(sys.argv[2], sys.argv[2:])"
        )
        command = [sys.executable, "-c", setup, str(fd_limit), *command]
    log = (workdir / "daemon.log").open("w", encoding="utf-8")
    env = {**os.environ, "XDG_STATE_HOME": str(workdir)}  # its run journal, not the user's
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        handle = Daemon(process, endpoint, sock)
        wait_ready(handle)
        yield handle
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()


def wait_ready(handle: Daemon, timeout: float = 60.0) -> None:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if not handle.alive():
            raise RuntimeError(f"the daemon exited with {handle.process.returncode}")
        if handle.path.exists() or not handle.endpoint.startswith("ipc://"):
            with contextlib.suppress(TimeoutError):
                if ask(handle.endpoint, {"op": "status"}, timeout=1.0).get("state") == "ready":
                    return
        time.sleep(0.05)
    raise TimeoutError("the daemon did not become ready")


def ask(endpoint: str, request: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    """One request on a fresh DEALER; its final reply."""
    context: zmq.Context[Any] = zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        sock.send(msgpack.packb({"v": 1, "id": uuid.uuid4().hex, **request}))
        if not sock.poll(int(timeout * 1000)):
            raise TimeoutError("no reply")
        reply: dict[str, Any] = msgpack.unpackb(sock.recv())
        return reply
    finally:
        sock.close(linger=0)


# -- part 1: a connection flood ---------------------------------------------------------------


def flood(workdir: Path, connections: int) -> dict[str, Any]:
    """Open ``connections`` idle ipc connections against a daemon with 1024 fds."""
    with daemon(workdir, replies=100, fd_limit=1024) as handle:
        before = handle.figures()
        idle = []
        answered = 0
        try:
            for n in range(connections):
                if not handle.alive():
                    break
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 10, 0))
                try:
                    sock.connect(str(handle.path))
                except OSError:
                    sock.close()
                    break
                idle.append(sock)
                if n % 100 == 99:
                    with contextlib.suppress(TimeoutError, zmq.ZMQError):
                        answered += (
                            ask(handle.endpoint, {"op": "status"}, 10).get("kind") == "result"
                        )
            time.sleep(1.0)
            survived = handle.alive()
            during = handle.figures() if survived else {}
            status = ask(handle.endpoint, {"op": "status"}, 10) if survived else {}
        finally:
            for sock in idle:
                sock.close()
        return {
            "connections_opened": len(idle),
            "survived": survived,
            "exit_code": handle.process.poll(),
            "status_answered_during": answered,
            "fds_before": before["fds"],
            "fds_during": during.get("fds"),
            "connections_closed": status.get("counters", {}).get("connections_closed"),
        }


# -- part 2: a client that never reads ---------------------------------------------------------


def non_reader(workdir: Path, frames: int) -> dict[str, Any]:
    """One client sends ``frames`` bad 60 KB frames and never reads: RSS before, peak, after.
    Then SKILLS_CLIENTS clients each ask ``skills`` SKILLS_REQUESTS times, never reading: RSS per
    client."""
    with daemon(workdir, replies=100) as handle:
        before = handle.figures()["rss_kib"]
        context: zmq.Context[Any] = zmq.Context.instance()
        hostile = context.socket(zmq.DEALER)
        hostile.setsockopt(zmq.LINGER, 0)
        hostile.setsockopt(zmq.SNDHWM, 0)
        hostile.setsockopt(zmq.RCVHWM, 1)
        hostile.connect(handle.endpoint)
        frame = msgpack.packb({"v": 1, "id": "x", "op": "status", BIG_KEY: 1})
        peak = before
        started = time.monotonic()
        for n in range(frames):
            hostile.send(frame)
            if n % 500 == 0:
                peak = max(peak, handle.figures()["rss_kib"])
        # Until the daemon has read them all (or 120 s), watching its RSS.
        while time.monotonic() - started < 120:
            peak = max(peak, handle.figures()["rss_kib"])
            status = ask(handle.endpoint, {"op": "status"}, 30)
            if status["counters"]["requests"] >= frames:
                break
            time.sleep(0.2)
        peak = max(peak, handle.figures()["rss_kib"])
        hostile.close(linger=0)
        time.sleep(2.0)
        after = handle.figures()["rss_kib"]
        answered = ask(handle.endpoint, {"op": "status"}, 30)
    result = {
        "frames": frames,
        "frame_bytes": len(frame),
        "rss_mib_before": round(before / 1024, 1),
        "rss_mib_peak": round(peak / 1024, 1),
        "rss_mib_after_client_left": round(after / 1024, 1),
        "requests_read": answered["counters"]["requests"],
        "replies_dropped": answered["counters"]["replies_dropped"],
    }
    # Clients that ask for the skill list (the built-in skills) and never read it.
    (workdir / "skills").mkdir(exist_ok=True)
    with daemon(workdir / "skills", replies=100, builtins=True) as handle:
        skills_before = handle.figures()["rss_kib"]
        context = zmq.Context.instance()
        readers = []
        request = msgpack.packb({"v": 1, "id": "s", "op": "skills"})
        for _ in range(SKILLS_CLIENTS):
            sock = context.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SNDHWM, 0)
            sock.setsockopt(zmq.RCVHWM, 1)
            sock.connect(handle.endpoint)
            for _ in range(SKILLS_REQUESTS):
                sock.send(request)
            readers.append(sock)
        total = SKILLS_CLIENTS * SKILLS_REQUESTS
        while ask(handle.endpoint, {"op": "status"}, 30)["counters"]["requests"] < total:
            time.sleep(0.2)
        time.sleep(1.0)
        skills_during = handle.figures()["rss_kib"]
        for sock in readers:
            sock.close(linger=0)
        reply_bytes = len(msgpack.packb(ask(handle.endpoint, {"op": "skills"}, 30)))
    result.update(
        skills_clients=SKILLS_CLIENTS,
        skills_requests_each=SKILLS_REQUESTS,
        skills_reply_bytes=reply_bytes,
        skills_rss_mib_per_client=round((skills_during - skills_before) / 1024 / SKILLS_CLIENTS, 2),
    )
    return result


# -- part 3: the soak ------------------------------------------------------------------------


@dataclass
class Tally:
    """Final replies per normal request id: each must end at exactly 1."""

    sent: Counter[str] = field(default_factory=Counter)
    finals: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def problems(self) -> list[str]:
        with self.lock:
            missing = [rid for rid in self.sent if self.finals[rid] == 0]
            twice = [rid for rid, n in self.finals.items() if n > 1]
            stray = [rid for rid in self.finals if rid not in self.sent]
        out = []
        if missing:
            out.append(f"{len(missing)} requests got no final reply")
        if twice:
            out.append(f"{len(twice)} requests got more than one final reply")
        if stray:
            out.append(f"{len(stray)} final replies to requests never sent here")
        return out


def normal_client(endpoint: str, stop: threading.Event, tally: Tally, seed: int) -> None:
    """A well-behaved DEALER: one request at a time, on one socket, every reply read."""
    rng = random.Random(seed)
    context: zmq.Context[Any] = zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    try:
        while not stop.is_set():
            rid = uuid.uuid4().hex
            op = rng.choice(["run", "run", "run", "status", "skills"])
            request: dict[str, Any] = {"v": 1, "id": rid, "op": op}
            if op == "run":
                request.update(query="how warm is the kitchen?", stream=rng.random() < 0.5)
            with tally.lock:
                tally.sent[rid] += 1
            sock.send(msgpack.packb(request))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if not sock.poll(1000):
                    continue
                reply = msgpack.unpackb(sock.recv())
                if reply.get("kind") in ("result", "error"):
                    with tally.lock:
                        tally.finals[reply.get("id")] += 1
                        tally.kinds[f"{reply['kind']}:{reply.get('code', reply.get('op'))}"] += 1
                    if reply.get("id") == rid:
                        if reply.get("code") == "busy":
                            stop.wait(rng.uniform(0.1, 0.5))  # what `busy` asks: back off
                        break
        # Anything that still comes (a second final reply would) within a moment is counted.
        while sock.poll(500):
            reply = msgpack.unpackb(sock.recv())
            if reply.get("kind") in ("result", "error"):
                with tally.lock:
                    tally.finals[reply.get("id")] += 1
    finally:
        sock.close(linger=0)


def hostile(endpoint: str, path: Path, stop: threading.Event, seed: int, cap: int) -> Counter[str]:
    """Every kind of misbehaviour, in turns, until ``stop``."""
    rng = random.Random(seed)
    done: Counter[str] = Counter()
    context: zmq.Context[Any] = zmq.Context.instance()

    def dealer(routing_id: bytes | None = None) -> zmq.Socket[bytes]:
        sock = context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 0)
        sock.setsockopt(zmq.RCVHWM, 1)
        sock.setsockopt(zmq.RECONNECT_IVL, -1)
        if routing_id is not None:
            sock.setsockopt(zmq.ROUTING_ID, routing_id)
        sock.connect(endpoint)
        return sock

    def idle_flood() -> None:
        conns = []
        for _ in range(cap + 60):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 5, 0))
            try:
                sock.connect(str(path))
            except OSError:
                sock.close()
                break
            conns.append(sock)
        stop.wait(rng.uniform(1.0, 8.0))  # past 5 s, the daemon closes them over the cap
        for sock in conns:
            sock.close()

    def garbage() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            with contextlib.suppress(OSError):
                sock.connect(str(path))
                sock.sendall(os.urandom(rng.randrange(1, 4096)))

    def bad_frames() -> None:
        sock = dealer()
        frames = [
            msgpack.packb({"v": 1, "id": "x", "op": "status", BIG_KEY: 1}),
            b"\x91" * 3000,
            os.urandom(512),
            msgpack.packb({"v": 2, "id": "y", "op": "run", "query": "q"}),
            msgpack.packb({"v": 1, "id": "z", "op": "run", "query": "q" * 5000}),
        ]
        for _ in range(rng.randrange(50, 300)):
            sock.send(rng.choice(frames))
        stop.wait(0.5)
        sock.close(linger=0)

    def own_routing_id() -> None:
        sock = dealer(b"client-" + str(rng.randrange(3)).encode())
        sock.send(msgpack.packb({"v": 1, "id": "mine", "op": "run", "query": "hello"}))
        stop.wait(0.3)
        sock.close(linger=0)

    def abandoned_run() -> None:
        sock = dealer()
        sock.send(
            msgpack.packb(
                {"v": 1, "id": uuid.uuid4().hex, "op": "run", "query": "q", "stream": True}
            )
        )
        stop.wait(rng.uniform(0.0, 0.2))
        sock.close(linger=0)

    def foreign_cancel() -> None:
        sock = dealer()
        for _ in range(5):
            target = uuid.uuid4().hex
            sock.send(msgpack.packb({"v": 1, "id": "c", "op": "cancel", "target": target}))
        stop.wait(0.2)
        sock.close(linger=0)

    kinds: list[Callable[[], None]] = [
        idle_flood,
        garbage,
        bad_frames,
        own_routing_id,
        abandoned_run,
        foreign_cancel,
    ]
    while not stop.is_set():
        kind = rng.choice(kinds)
        kind()
        done[kind.__name__] += 1
    return done


def soak(
    workdir: Path, seconds: float, *, normal: int, hostiles: int = 2, cap: int = 16, mqtt: int = 0
) -> dict[str, Any]:
    """``normal`` well-behaved ZeroMQ clients (more than ``cap``, the daemon's max_connections,
    so some are told ``busy``), ``hostiles`` misbehaving ones, and ``mqtt`` MQTT clients through
    a real Mosquitto (none: no bridge)."""
    if not mqtt:
        return _soak(workdir, seconds, normal, hostiles, cap=cap, mqtt=0, broker_port=None)
    from scripts.bench.soak_mqtt import (
        mosquitto,  # only with --mqtt: needs paho-mqtt and Debian's mosquitto
    )

    with mosquitto(workdir / "broker") as broker:
        port = broker.port
        return _soak(workdir, seconds, normal, hostiles, cap=cap, mqtt=mqtt, broker_port=port)


def _soak(
    workdir: Path,
    seconds: float,
    normal: int,
    hostiles: int,
    *,
    cap: int,
    mqtt: int,
    broker_port: int | None,
) -> dict[str, Any]:
    sections = ""
    if broker_port is not None:
        from scripts.bench.soak_mqtt import mqtt_section

        sections = mqtt_section(broker_port)
    # 50 ms a run bounds the runs, and so what the scripted model keeps of their prompts.
    config = f"max_connections = {cap}"
    with daemon(
        workdir,
        replies=int(seconds * 25) + 1000,
        delay_s=0.05,
        daemon_config=config,
        sections=sections,
    ) as handle:
        # Warm up: the first runs and connections allocate what the daemon keeps for good.
        for _ in range(20):
            ask(handle.endpoint, {"op": "run", "query": "warm up"})
        time.sleep(1.0)
        before = handle.figures()
        stop = threading.Event()
        tally = Tally()
        mqtt_tally = Tally()
        hostile_done: list[Counter[str]] = []
        threads = [
            threading.Thread(target=normal_client, args=(handle.endpoint, stop, tally, n))
            for n in range(normal)
        ]
        threads += [
            threading.Thread(
                target=lambda n=n: hostile_done.append(
                    hostile(handle.endpoint, handle.path, stop, 1000 + n, cap)
                )
            )
            for n in range(hostiles)
        ]
        if broker_port is not None:
            from scripts.bench.soak_mqtt import mqtt_client

            threads += [
                threading.Thread(
                    target=mqtt_client, args=(broker_port, stop, mqtt_tally, 2000 + n)
                )
                for n in range(mqtt)
            ]
        for thread in threads:
            thread.start()
        stop.wait(seconds)
        stop.set()
        for thread in threads:
            thread.join(120)
        # Settle: the fds and threads come back; RSS is read once they have.
        until = time.monotonic() + SETTLE_S
        after = handle.figures()
        while time.monotonic() < until and (
            after["fds"] != before["fds"] or after["threads"] != before["threads"]
        ):
            time.sleep(0.5)
            after = handle.figures()
        status = ask(handle.endpoint, {"op": "status"})
        survived = handle.alive()
    hostile_total: Counter[str] = Counter()
    for part in hostile_done:
        hostile_total.update(part)
    problems = tally.problems() + [f"mqtt: {p}" for p in mqtt_tally.problems()]
    rss_growth_mib = (after["rss_kib"] - before["rss_kib"]) / 1024
    return {
        "seconds": seconds,
        "survived": survived,
        "normal_requests": sum(tally.sent.values()),
        "normal_answered_once": sum(1 for rid in tally.sent if tally.finals[rid] == 1),
        "normal_replies": dict(tally.kinds),
        "mqtt_requests": sum(mqtt_tally.sent.values()),
        "mqtt_answered_once": sum(1 for rid in mqtt_tally.sent if mqtt_tally.finals[rid] == 1),
        "mqtt_replies": dict(mqtt_tally.kinds),
        "answer_problems": problems,
        "hostile_acts": dict(hostile_total),
        "before": before,
        "after": after,
        "rss_growth_mib": round(rss_growth_mib, 1),
        "counters": status.get("counters", {}),
    }


def flat(result: dict[str, Any], slack_mib: float) -> list[str]:
    """What is not flat about a soak's result (empty: all is well)."""
    problems = list(result["answer_problems"])
    if not result["survived"]:
        problems.append("the daemon died")
    before, after = result["before"], result["after"]
    for key in ("fds", "threads"):
        if after[key] != before[key]:
            problems.append(f"{key}: {before[key]} before, {after[key]} after")
    if result["rss_growth_mib"] > slack_mib:
        problems.append(f"RSS grew {result['rss_growth_mib']} MiB (allowed {slack_mib})")
    if result["normal_requests"] == 0:
        problems.append("no normal request was sent")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="soak length (600)")
    parser.add_argument("--only", choices=["soak", "flood", "non-reader"])
    parser.add_argument("--flood", type=int, default=1020, help="idle connections (1020)")
    parser.add_argument("--frames", type=int, default=12_000, help="bad 60 KB frames (12000)")
    parser.add_argument("--rss-slack-mib", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=24, help="normal ZeroMQ clients (24)")
    parser.add_argument("--cap", type=int, default=16, help="the daemon's max_connections (16)")
    parser.add_argument("--mqtt", type=int, default=0, help="MQTT clients via a Mosquitto (0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="edge-agent-soak-") as tmp:
        root = Path(tmp)
        if args.only in (None, "flood"):
            (root / "flood").mkdir()
            report["flood"] = flood(root / "flood", args.flood)
            if not report["flood"]["survived"]:
                failed.append("the daemon died in the connection flood")
        if args.only in (None, "non-reader"):
            (root / "non-reader").mkdir()
            report["non_reader"] = non_reader(root / "non-reader", args.frames)
        if args.only in (None, "soak"):
            (root / "soak").mkdir()
            report["soak"] = soak(
                root / "soak", args.seconds, normal=args.clients, cap=args.cap, mqtt=args.mqtt
            )
            failed += flat(report["soak"], args.rss_slack_mib)
    report["problems"] = failed
    if args.json:
        print(json.dumps(report))
    else:
        for part, figures in report.items():
            print(f"{part}: {json.dumps(figures, indent=2)}")
        print("FLAT" if not failed else "NOT FLAT: " + "; ".join(failed))
    zmq.Context.instance().destroy(linger=0)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
