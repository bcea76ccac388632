"""Soak the daemon with the real model: everything at once, for a number of questions or hours.

A real ``edge-agent serve`` runs the embedded model (or ``--model PATH``, any GGUF) with its run
journal, a trigger every minute and the MQTT bridge on a real Mosquitto. Meanwhile:

- ``--clients`` ZeroMQ clients ask questions one at a time, half with a ``key`` (and now and then
  the same key again, which the journal answers), some streamed, some with a short deadline, and
  some cancelled after their first event;
- ``--mqtt`` clients ask over MQTT (soak_mqtt.py), a reader asks ``status``, ``runs`` and
  ``result``, and ``--hostile`` clients misbehave (soak.py's: idle floods, garbage, bad frames,
  borrowed routing ids, abandoned runs, foreign cancels).

Every ``--every`` seconds (default 60) the daemon's ``RssAnon``, ``VmSwap``, fds, threads, the
journal's size on disk and the queue are recorded. At the end it checks that every request got
exactly one final reply, and prints the growth of ``RssAnon + VmSwap`` per 1,000 questions after
the first 100 (a least-squares slope), fds and threads against the start, the median run seconds
of the first and the last 100 questions, and writes a PNG of memory and run seconds
(``--plot``, needs matplotlib: the ``bench`` extra).

A question is a ZeroMQ client's ask or a well-formed MQTT ask that got its final reply; both
count toward ``--questions`` and the growth per 1,000 (the samples keep them apart). SIGINT or
SIGTERM to the soak ends it early but whole: no new questions, the ones under way answered, then
the summary. If the daemon dies, nobody waits on a reply it can no longer send: those are lost.

Exit status 0 when the daemon survived and every request got exactly one reply, and, for a run
of at least 1,000 questions, the issue's bounds held (growth <= 2 MiB per 1,000, fds and threads
back, the last 100's median <= 1.1x the first 100's, the journal within 2x its size at 100
questions); else 1. ``--json`` prints the figures as one JSON object.

Usage: python -m scripts.bench.soak_model [--questions 2000] [--hours H] [--model PATH]
       [--clients 3] [--mqtt 1] [--hostile 1] [--every 60] [--plot soak.png] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import zmq

from scripts.bench import soak_mqtt
from scripts.bench.soak import Tally, hostile, wait_ready
from scripts.bench.soak_mqtt import mosquitto, mqtt_client, mqtt_section

QUESTIONS = (
    "How warm is the CPU?",
    "What is the load average?",
    "How much memory is free?",
    "How long has the system been up?",
    "How full is the disk?",
    "Is the system busy right now?",
    "What is the CPU temperature in Fahrenheit?",
    "How much swap is in use?",
)
KEEP_RUNS = 200
SETTLE_S = 20.0
REPLY_WAIT_S = 600.0
"""A client's patience: far beyond any run, so a missing reply is a lost one, not a slow one."""
# The MQTT clients' too: with the real model an ask can wait minutes behind eight runs.
soak_mqtt.REPLY_WAIT_S = REPLY_WAIT_S


def proc_figures(pid: int) -> dict[str, float]:
    """RssAnon, VmSwap, VmRSS (MiB), threads and fds of a process, from /proc."""
    figures: dict[str, float] = {"fds": len(os.listdir(f"/proc/{pid}/fd"))}
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "VmSwap", "VmRSS"):
            figures[key] = int(value.split()[0]) / 1024
        elif key == "Threads":
            figures["threads"] = int(value)
    return figures


def journal_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*.sqlite3*") if p.is_file())


@dataclass
class Progress:
    """Questions asked and answered, over ZeroMQ and MQTT, and what each ZeroMQ run took."""

    wanted: int
    until: float
    taken: int = 0
    done: int = 0
    """ZeroMQ questions that got their final reply."""
    mqtt_done: int = 0
    """MQTT asks (well-formed ones) that got their result."""
    gone: threading.Event = field(default_factory=threading.Event)
    """Set when the daemon is gone or the soak is told to stop: nobody waits on a reply then."""
    run_seconds: list[float] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_ids: list[str] = field(default_factory=list)

    @property
    def questions(self) -> int:
        """Every question answered: the ZeroMQ clients' and the MQTT client's."""
        return self.done + self.mqtt_done

    def take(self) -> bool:
        with self.lock:
            if (
                self.taken + self.mqtt_done >= self.wanted
                or time.monotonic() >= self.until
                or self.gone.is_set()
            ):
                return False
            self.taken += 1
            return True

    def stop_taking(self) -> None:
        """No new questions; those under way still get their replies."""
        with self.lock:
            self.until = 0.0

    def mqtt_answered(self) -> None:
        with self.lock:
            self.mqtt_done += 1

    def record(self, reply: dict[str, Any]) -> None:
        with self.lock:
            self.done += 1
            kind = reply.get("outcome") or reply.get("code") or reply.get("kind")
            self.outcomes[str(kind)] = self.outcomes.get(str(kind), 0) + 1
            timing = reply.get("timing")
            if reply.get("kind") == "result" and isinstance(timing, dict):
                self.run_seconds.append(float(timing.get("run_ms", 0.0)) / 1000)
            rid = reply.get("run_id")
            if isinstance(rid, str):
                self.last_ids = [*self.last_ids[-19:], rid]


def asker(endpoint: str, progress: Progress, tally: Tally, seed: int) -> None:
    """One ZeroMQ client: a question at a time until the questions run out."""
    rng = random.Random(seed)
    context: zmq.Context[Any] = zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    keys: list[tuple[str, str]] = []
    try:
        while progress.take():
            rid = uuid.uuid4().hex
            request: dict[str, Any] = {"v": 1, "id": rid, "op": "run"}
            request["query"] = rng.choice(QUESTIONS)
            cancel = rng.random() < 0.05
            request["stream"] = cancel or rng.random() < 0.3
            if rng.random() < 0.05:
                request["deadline_ms"] = rng.choice([1000, 2000, 3000])
            if keys and rng.random() < 0.05:
                request["key"], request["query"] = rng.choice(keys)  # answered by the journal
            elif rng.random() < 0.5:
                keys.append((uuid.uuid4().hex, request["query"]))
                keys = keys[-20:]
                request["key"] = keys[-1][0]
            while True:
                reply = _one_run(sock, request, tally, cancel, progress.gone)
                if reply.get("code") != "busy":
                    break
                time.sleep(rng.uniform(0.2, 1.0))  # what `busy` asks: back off, then again
                request = {**request, "id": uuid.uuid4().hex}
            progress.record(reply)
        while sock.poll(500):  # a second final reply, arriving late, is counted too
            _count(msgpack.unpackb(sock.recv()), tally)
    finally:
        sock.close(linger=0)


def _one_run(
    sock: zmq.Socket[bytes],
    request: dict[str, Any],
    tally: Tally,
    cancel: bool,
    gone: threading.Event,
) -> dict[str, Any]:
    rid = request["id"]
    with tally.lock:
        tally.sent[rid] += 1
    sock.send(msgpack.packb(request))
    until = time.monotonic() + REPLY_WAIT_S
    while time.monotonic() < until:
        if not sock.poll(1000):
            if gone.is_set():  # the daemon is gone and nothing it sent is left unread
                break
            continue
        reply: dict[str, Any] = msgpack.unpackb(sock.recv())
        if cancel and reply.get("kind") == "event" and reply.get("id") == rid:
            cancel = False
            sock.send(
                msgpack.packb({"v": 1, "id": uuid.uuid4().hex, "op": "cancel", "target": rid})
            )
            continue
        if _count(reply, tally) and reply.get("id") == rid:
            return reply
    return {"kind": "lost"}


def _count(reply: dict[str, Any], tally: Tally) -> bool:
    """Count a final reply to a run or an ask (a cancel's own reply is not one)."""
    if reply.get("kind") not in ("result", "error") or reply.get("op") == "cancel":
        return False
    with tally.lock:
        tally.finals[str(reply.get("id"))] += 1
        tally.kinds[f"{reply['kind']}:{reply.get('outcome') or reply.get('code')}"] += 1
    return True


def reader(endpoint: str, progress: Progress, stop: threading.Event, tally: Tally) -> None:
    """``status``, ``runs`` and ``result`` of a recent run, in turns, every second."""
    context: zmq.Context[Any] = zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    turn = 0
    try:
        while not stop.wait(1.0):
            turn += 1
            request: dict[str, Any] = {"v": 1, "id": uuid.uuid4().hex}
            with progress.lock:
                recent = progress.last_ids[-1] if progress.last_ids else None
            if turn % 3 == 0 and recent:
                request.update(op="result", target=recent)
            else:
                request.update(op="runs", limit=20) if turn % 3 == 1 else request.update(
                    op="status"
                )
            with tally.lock:
                tally.sent[request["id"]] += 1
            sock.send(msgpack.packb(request))
            until = time.monotonic() + REPLY_WAIT_S
            while time.monotonic() < until and not progress.gone.is_set() and not sock.poll(1000):
                pass
            if sock.poll(0):
                reply = msgpack.unpackb(sock.recv())
                with tally.lock:
                    tally.finals[str(reply.get("id"))] += 1
                    tally.kinds[f"{reply.get('kind')}:{reply.get('op') or reply.get('code')}"] += 1
    finally:
        sock.close(linger=0)


def status(endpoint: str) -> dict[str, Any]:
    context: zmq.Context[Any] = zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        sock.send(msgpack.packb({"v": 1, "id": uuid.uuid4().hex, "op": "status"}))
        if not sock.poll(30_000):
            return {}
        reply: dict[str, Any] = msgpack.unpackb(sock.recv())
        return reply
    finally:
        sock.close(linger=0)


@contextlib.contextmanager
def serve(workdir: Path, model: str | None, broker_port: int) -> Iterator[tuple[Any, str, Path]]:
    config = workdir / "config.toml"
    config.write_text(
        "[daemon]\n[skills]\nbuiltins = true\n"
        f"[journal]\nkeep_runs = {KEEP_RUNS}\n"
        '[[triggers]]\nname = "minute"\nevery = "1m"\nquery = "Is the system busy right now?"\n'
        + mqtt_section(broker_port),
        encoding="utf-8",
    )
    sock = workdir / "agent.sock"
    endpoint = f"ipc://{sock}"
    command = [sys.executable, "-m", "edge_agentd.cli", "serve", "--config", str(config)]
    command += ["--endpoint", endpoint] + (["--model", model] if model else [])
    log = (workdir / "daemon.log").open("w", encoding="utf-8")
    env = {**os.environ, "XDG_STATE_HOME": str(workdir)}
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)

    class Handle:
        pid = process.pid

        def __init__(self) -> None:
            self.process, self.endpoint, self.path = process, endpoint, sock

        def alive(self) -> bool:
            return process.poll() is None

    try:
        wait_ready(Handle(), timeout=600)  # type: ignore[arg-type]
        yield process, endpoint, sock
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()


def sample(
    pid: int, workdir: Path, endpoint: str, progress: Progress, started: float
) -> dict[str, Any]:
    row: dict[str, Any] = {"minute": round((time.monotonic() - started) / 60, 2)}
    row.update(proc_figures(pid))
    row["journal_kib"] = round(journal_bytes(workdir) / 1024, 1)
    reply = status(endpoint)
    row["queue"] = reply.get("queue_depth")
    row["state"] = reply.get("state")
    with progress.lock:
        row["questions"] = progress.questions
        row["zmq"], row["mqtt"] = progress.done, progress.mqtt_done
        row["run_s_median"] = (
            round(statistics.median(progress.run_seconds[-20:]), 3)
            if progress.run_seconds
            else None
        )
    return row


def growth_per_1000(rows: list[dict[str, Any]], after: int = 100) -> float | None:
    """The least-squares slope of RssAnon + VmSwap over questions, past the first ``after``."""
    points = [
        (r["questions"], r["RssAnon"] + r.get("VmSwap", 0.0))
        for r in rows
        if r["questions"] >= after
    ]
    if len(points) < 3 or points[-1][0] == points[0][0]:
        return None
    return statistics.linear_regression([p[0] for p in points], [p[1] for p in points]).slope * 1000


def plot(rows: list[dict[str, Any]], seconds: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (memory, latency) = plt.subplots(2, 1, figsize=(9, 7))
    questions = [r["questions"] for r in rows]
    memory.plot(questions, [r["RssAnon"] for r in rows], label="RssAnon")
    memory.plot(
        questions, [r["RssAnon"] + r.get("VmSwap", 0.0) for r in rows], label="RssAnon + VmSwap"
    )
    memory.set_ylabel("MiB")
    memory.set_xlabel("questions answered")
    memory.legend()
    latency.plot(range(1, len(seconds) + 1), seconds, ",", alpha=0.6)
    latency.set_ylabel("run seconds")
    latency.set_xlabel("question")
    figure.tight_layout()
    figure.savefig(path, dpi=90)


def soak(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    until = time.monotonic() + (args.hours * 3600 if args.hours else 1e12)
    progress = Progress(args.questions, until)
    tally = Tally()
    stop = threading.Event()
    with (
        mosquitto(workdir / "broker") as broker,
        serve(workdir, args.model, broker.port) as (
            process,
            endpoint,
            path,
        ),
    ):
        started = time.monotonic()
        rows = [sample(process.pid, workdir, endpoint, progress, started)]
        askers = [
            threading.Thread(target=asker, args=(endpoint, progress, tally, i), daemon=True)
            for i in range(args.clients)
        ]
        others = [
            threading.Thread(target=reader, args=(endpoint, progress, stop, tally), daemon=True)
        ]
        others += [
            threading.Thread(
                target=mqtt_client,
                args=(broker.port, stop, tally, 100 + i),
                kwargs={"on_answer": progress.mqtt_answered, "gone": progress.gone},
                daemon=True,
            )
            for i in range(args.mqtt)
        ]
        hostiles: list[Any] = []
        others += [
            threading.Thread(
                target=lambda i=i: hostiles.append(hostile(endpoint, path, stop, 200 + i, 16)),
                daemon=True,
            )
            for i in range(args.hostile)
        ]
        for thread in askers + others:
            thread.start()
        with _stopped_by_signals(progress):
            while any(t.is_alive() for t in askers) and process.poll() is None:
                next_sample = time.monotonic() + args.every
                while (
                    time.monotonic() < next_sample
                    and any(t.is_alive() for t in askers)
                    and process.poll() is None
                ):
                    time.sleep(0.5)
                if process.poll() is not None:
                    break
                rows.append(sample(process.pid, workdir, endpoint, progress, started))
                if not args.json:
                    print(json.dumps(rows[-1]), flush=True)
        if process.poll() is not None:
            progress.gone.set()  # the daemon is gone: every reply still awaited is lost
        stop.set()
        for thread in others:
            thread.join(REPLY_WAIT_S)
        survived = process.poll() is None
        time.sleep(SETTLE_S if survived else 0)
        if survived:
            rows.append(sample(process.pid, workdir, endpoint, progress, started))
        triggers_fired = _trigger_runs(endpoint) if survived else None
    seconds = progress.run_seconds
    first, last = seconds[:100], seconds[-100:]
    at_100 = next((r for r in rows if r["questions"] >= 100), rows[0])
    result: dict[str, Any] = {
        "questions": progress.questions,
        "zmq_questions": progress.done,
        "mqtt_questions": progress.mqtt_done,
        "survived": survived,
        "problems": tally.problems(),
        "replies": dict(sorted(tally.kinds.items())),
        "outcomes": progress.outcomes,
        "hostile": sum(hostiles, start=Counter[str]()),
        "growth_mib_per_1000": growth_per_1000(rows),
        "start": rows[0],
        "at_100": at_100,
        "end": rows[-1],
        "median_run_s_first_100": statistics.median(first) if first else None,
        "median_run_s_last_100": statistics.median(last) if last else None,
        "trigger_runs": triggers_fired,
        "minutes": rows[-1]["minute"],
        "rows": rows,
    }
    if args.plot:
        plot(rows, seconds, Path(args.plot))
    return result


@contextlib.contextmanager
def _stopped_by_signals(progress: Progress) -> Iterator[None]:
    """SIGINT or SIGTERM ends the soak early but whole: no new questions, then the summary."""

    def stop_taking(signum: int, frame: object) -> None:
        print(f"signal {signum}: no new questions; finishing those under way", flush=True)
        progress.stop_taking()

    previous = {sig: signal.signal(sig, stop_taking) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _trigger_runs(endpoint: str) -> int | None:
    context: zmq.Context[Any] = zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        sock.send(msgpack.packb({"v": 1, "id": "t", "op": "triggers"}))
        if not sock.poll(30_000):
            return None
        reply = msgpack.unpackb(sock.recv())
        return sum(int(t.get("counts", {}).get("fired", 0)) for t in reply.get("triggers", []))
    finally:
        sock.close(linger=0)


def verdict(result: dict[str, Any]) -> list[str]:
    failures = list(result["problems"])
    if not result["survived"]:
        failures.append("the daemon did not survive")
    if result["questions"] < 1000:
        return failures
    growth = result["growth_mib_per_1000"]
    if growth is not None and growth > 2.0:
        failures.append(f"RssAnon + VmSwap grew {growth:.2f} MiB per 1,000 questions (> 2)")
    start, end = result["at_100"], result["end"]
    for key in ("fds", "threads"):
        if end[key] > start[key]:
            failures.append(f"{key}: {start[key]} at 100 questions, {end[key]} at the end")
    first, last = result["median_run_s_first_100"], result["median_run_s_last_100"]
    if first and last and last > 1.1 * first:
        failures.append(f"median run seconds {last:.2f} last 100 against {first:.2f} first 100")
    if end["journal_kib"] > 2 * max(start["journal_kib"], 1):
        failures.append(f"journal {end['journal_kib']} KiB against {start['journal_kib']} at 100")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--hours", type=float, default=0.0, help="stop after this long too")
    parser.add_argument("--model", help="a GGUF path (default: the embedded model)")
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--mqtt", type=int, default=1)
    parser.add_argument("--hostile", type=int, default=1)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--plot", help="write a PNG of memory and run seconds here")
    parser.add_argument("--workdir", help="keep the daemon's files here (default: a temp dir)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        workdir = (
            Path(args.workdir)
            if args.workdir
            else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        )
        workdir.mkdir(parents=True, exist_ok=True)
        result = soak(args, workdir)
    failures = verdict(result)
    result["failures"] = failures
    if args.json:
        print(json.dumps(result, default=str))
    else:
        rows = result.pop("rows")
        print(json.dumps({k: v for k, v in result.items()}, indent=1, default=str))
        print(f"{len(rows)} samples; {'OK' if not failures else 'FAILED: ' + '; '.join(failures)}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
