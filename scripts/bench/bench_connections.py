"""More clients than the connection cap, a burst of one-shot clients, and exhausted fds (issue 20).

Three cases, each against a real ``edge-agent serve`` process with a scripted model:

- ``many``: ``--clients`` DEALERs (320) each send ``--runs`` runs (4) at once, with
  ``queue_limit = 2000``. Every run must get exactly one final reply.
- ``burst``: ``--burst`` sockets (1,000) connect together and each sends one malformed frame:
  every one must get exactly one reply. Then again at ``--small-cap`` (64) with one run from
  each: the sockets over the cap must be told ``busy``, not dropped.
- ``exhausted``: the daemon runs with RLIMIT_NOFILE ``--fd-limit`` (128), on ipc and on tcp, and
  ``--holders`` (400) reconnecting ZeroMQ clients hold connections to it. Its CPU (from
  /proc/<pid>/stat, all threads) is read over ``--window`` seconds (5); then the clients leave
  and a fresh client must be answered: the daemon recovered.
- ``single_burst``: the same at RLIMIT_NOFILE ``--burst-fd-limit`` (512) with
  ``--burst-holders`` (600) clients connecting in one burst, faster than one pass of the serving
  loop: the case issue 20 left open (on tcp libzmq's accept retries spun both cores, on ipc
  libzmq aborts on EMFILE). ``connections_past_pause`` (from ``status``) says how far past the
  pause point the burst got before the pause engaged; ``fds_peak`` is the most fds seen open.

For each: replies answered out of sent, ``connections_accepted`` and ``replies_dropped``.
Exit status 1 when a request went unanswered or was answered twice, ``connections_accepted`` went
past ``--churn`` (4) times the clients, the daemon used more than ``--cpu-budget`` (5%) of a core
with its fds exhausted, or it did not recover. Compare with another tree as soak.py says.

Usage: python -m scripts.bench.bench_connections [--only many|burst|exhausted|single_burst]
       [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import msgpack
import zmq

from scripts.bench.soak import ask, daemon
from scripts.testbed.processes import cpu_seconds, free_port

MALFORMED = b"\xc1 not msgpack"


def allow_fds(count: int) -> None:
    """This process needs an fd per socket (and libzmq a few more)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count * 2 + 256
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, want), hard))


def dealers(context: zmq.Context[Any], endpoint: str, count: int) -> list[zmq.Socket[bytes]]:
    sockets = []
    for _ in range(count):
        sock = context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(endpoint)
        sockets.append(sock)
    return sockets


def collect(
    sockets: list[zmq.Socket[bytes]], expected: int, timeout: float
) -> tuple[Counter[str], Counter[str]]:
    """Read final replies from ``sockets`` until ``expected`` came, or ``timeout``; then a moment
    more, so a second reply to anything is counted. Returns (finals by id, replies by kind)."""
    poller = zmq.Poller()
    for sock in sockets:
        poller.register(sock, zmq.POLLIN)
    finals: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    until = time.monotonic() + timeout
    settle: float | None = None
    while time.monotonic() < (settle or until):
        for sock, _ in poller.poll(200):
            while sock.poll(0):
                reply = msgpack.unpackb(sock.recv())
                if reply.get("kind") in ("result", "error"):
                    key = f"{id(sock)}:{reply.get('id')}"
                    finals[key] += 1
                    kinds[f"{reply['kind']}:{reply.get('code', reply.get('op'))}"] += 1
        if settle is None and sum(1 for n in finals.values() if n) >= expected:
            settle = time.monotonic() + 1.0
    return finals, kinds


def counters(endpoint: str) -> dict[str, Any]:
    """The daemon's counters, or ``{"status": "no reply"}`` when even ``status`` went unanswered."""
    try:
        status = ask(endpoint, {"op": "status"}, 30)
    except TimeoutError:
        return {"status": "no reply"}
    found: dict[str, Any] = status.get("counters", {})
    return found


def tally(sent: int, finals: Counter[str], kinds: Counter[str], status: dict[str, Any]) -> dict:
    return {
        "sent": sent,
        "answered_once": sum(1 for n in finals.values() if n == 1),
        "answered_twice": sum(1 for n in finals.values() if n > 1),
        "replies": dict(kinds),
        "connections_accepted": status.get("connections_accepted"),
        "connections_closed": status.get("connections_closed", 0),
        "replies_dropped": status.get("replies_dropped", 0),
    }


def many(workdir: Path, clients: int, runs: int, timeout: float) -> dict[str, Any]:
    allow_fds(clients)
    context: zmq.Context[Any] = zmq.Context()
    config = "queue_limit = 2000"
    with daemon(workdir, replies=clients * runs + 100, daemon_config=config) as handle:
        sockets = dealers(context, handle.endpoint, clients)
        started = time.monotonic()
        for n, sock in enumerate(sockets):
            for r in range(runs):
                request = {"v": 1, "id": f"c{n}-r{r}", "op": "run", "query": "how warm is it?"}
                sock.send(msgpack.packb(request))
        finals, kinds = collect(sockets, clients * runs, timeout)
        elapsed = time.monotonic() - started
        result = tally(clients * runs, finals, kinds, counters(handle.endpoint))
        result["seconds"] = round(elapsed, 1)
        for sock in sockets:
            sock.close(linger=0)
    context.term()
    return result


def burst(workdir: Path, count: int, cap: int | None) -> dict[str, Any]:
    """One malformed frame from each of ``count`` sockets; with ``cap``, one run from each."""
    allow_fds(count)
    context: zmq.Context[Any] = zmq.Context()
    config = "queue_limit = 2000" if cap is None else f"queue_limit = 2000\nmax_connections = {cap}"
    with daemon(workdir, replies=count + 10, daemon_config=config) as handle:
        sockets = dealers(context, handle.endpoint, count)
        for n, sock in enumerate(sockets):
            run = {"v": 1, "id": f"b{n}", "op": "run", "query": "how warm is it?"}
            sock.send(MALFORMED if cap is None else msgpack.packb(run))
        finals, kinds = collect(sockets, count, 120)
        result = tally(count, finals, kinds, counters(handle.endpoint))
        result["cap"] = cap or "default"
        for sock in sockets:
            sock.close(linger=0)
    context.term()
    return result


def exhausted(workdir: Path, transport: str, limit: int, holders: int, window: float) -> dict:
    allow_fds(holders)
    endpoint = f"tcp://127.0.0.1:{free_port()}" if transport == "tcp" else None
    context: zmq.Context[Any] = zmq.Context()
    with daemon(workdir, replies=100, fd_limit=limit, endpoint=endpoint) as handle:
        sockets = dealers(context, handle.endpoint, holders)
        for n, sock in enumerate(sockets):
            sock.send(msgpack.packb({"v": 1, "id": f"h{n}", "op": "status"}))
        fds = 0
        until = time.monotonic() + 3.0  # the connections pile up
        while time.monotonic() < until and handle.alive():
            with contextlib.suppress(OSError):
                fds = max(fds, len(os.listdir(f"/proc/{handle.pid}/fd")))
            time.sleep(0.05)
        first = cpu_seconds(handle.pid)
        time.sleep(window)
        cpu = (cpu_seconds(handle.pid) - first) / window
        finals, kinds = collect(sockets, holders, 5)
        for sock in sockets:
            sock.close(linger=0)
        recovered = False
        until = time.monotonic() + 60
        while time.monotonic() < until and not recovered and handle.alive():
            with contextlib.suppress(TimeoutError):
                recovered = ask(handle.endpoint, {"op": "status"}, 5).get("kind") == "result"
        status = counters(handle.endpoint) if recovered else {}
        result = tally(holders, finals, kinds, status)
        result.update(
            transport=transport,
            fd_limit=limit,
            fds_peak=fds,
            connections_past_pause=status.get("connections_past_pause"),
            connections_refused_at_limit=status.get("connections_refused_at_limit"),
            cpu_share=round(cpu, 3),
            survived=handle.alive(),
            recovered=recovered,
        )
    context.term()
    return result


def problems(report: dict[str, Any], churn: float, cpu_budget: float) -> list[str]:
    found = []
    for name, part in report.items():
        exhausted_case = name.startswith(("exhausted", "single_burst"))
        if part["answered_once"] != part["sent"] and not exhausted_case:
            found.append(f"{name}: {part['answered_once']} of {part['sent']} answered once")
        if part["answered_twice"]:
            found.append(f"{name}: {part['answered_twice']} answered twice")
        clients = part["sent"] // (part.get("runs") or 1)
        accepted = part.get("connections_accepted") or 0
        if accepted > churn * clients + 10:
            found.append(f"{name}: {accepted} connections accepted for {clients} clients")
        if exhausted_case:
            if not part["survived"]:
                found.append(f"{name}: the daemon died")
            if not part["recovered"]:
                found.append(f"{name}: no answer after the clients left")
            if part["cpu_share"] > cpu_budget:
                found.append(f"{name}: {part['cpu_share']:.0%} of a core with its fds exhausted")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["many", "burst", "exhausted", "single_burst"])
    parser.add_argument("--clients", type=int, default=320)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=300.0, help="for the many case (300 s)")
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--small-cap", type=int, default=64)
    parser.add_argument("--fd-limit", type=int, default=128)
    parser.add_argument("--holders", type=int, default=400)
    parser.add_argument("--burst-fd-limit", type=int, default=512)
    parser.add_argument("--burst-holders", type=int, default=600)
    parser.add_argument("--window", type=float, default=5.0)
    parser.add_argument("--churn", type=float, default=4.0)
    parser.add_argument("--cpu-budget", type=float, default=0.05)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="edge-agent-conns-") as tmp:
        root = Path(tmp)
        cases: list[tuple[str, Any]] = []
        if args.only in (None, "many"):
            cases.append(("many", lambda d: many(d, args.clients, args.runs, args.timeout)))
        if args.only in (None, "burst"):
            cases.append(("burst", lambda d: burst(d, args.burst, None)))
            cases.append(("burst_small_cap", lambda d: burst(d, args.burst, args.small_cap)))
        if args.only in (None, "exhausted"):
            for transport in ("ipc", "tcp"):
                cases.append(
                    (
                        f"exhausted_{transport}",
                        lambda d, t=transport: exhausted(
                            d, t, args.fd_limit, args.holders, args.window
                        ),
                    )
                )
        if args.only in (None, "single_burst"):
            for transport in ("ipc", "tcp"):
                cases.append(
                    (
                        f"single_burst_{transport}",
                        lambda d, t=transport: exhausted(
                            d, t, args.burst_fd_limit, args.burst_holders, args.window
                        ),
                    )
                )
        for name, case in cases:
            (root / name).mkdir()
            report[name] = case(root / name)
            if name == "many":
                report[name]["runs"] = args.runs
            if not args.json:
                print(f"{name}: {json.dumps(report[name])}", flush=True)
    found = problems(report, args.churn, args.cpu_budget)
    if args.json:
        print(json.dumps({**report, "problems": found}))
    else:
        print("OK" if not found else "PROBLEMS: " + "; ".join(found))
    return 0 if not found else 1


if __name__ == "__main__":
    sys.exit(main())
