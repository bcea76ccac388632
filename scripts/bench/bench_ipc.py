"""What the daemon's IPC costs: ZeroMQ + msgpack beside a minimal HTTP + JSON server, same work.

Both servers run as separate processes and do identical work per request: the same Agent, model
script (a scripted mock, so the model costs nothing) and registry. The client measures round trips
of ``status`` and ``run``, sequential throughput, and the agent run alone in-process, so that the
daemon's own cost per request (round trip minus the run itself) can be held to the 1 ms budget and
to 0.8x the HTTP server's. The kinds are timed in interleaved rounds, medians of the rounds'
medians, so that a loaded machine moves both sides alike.
It also reads the daemon's resident memory across 1,000 runs, which must stay flat.

    .venv/bin/python -m scripts.bench.bench_ipc [--requests 1000]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgpack
import zmq

from edge_agentd.agent.events import STATE_ADAPTER, AgentState
from edge_agentd.agent.loop import Agent
from edge_agentd.agent.registry import Registry
from edge_agentd.model.scripted import MockModel
from scripts.bench import CHECKOUT
from scripts.bench.add_run import ANSWER, QUERY, SCRIPT, write_add_run
from scripts.testbed.processes import free_port, rss_kib
from scripts.testbed.serve_command import serve_command

BUDGET_MS = 1.0
RATIO_GOAL = 0.8
"""The daemon's own cost per request against the HTTP server's (docs/design.md, Budgets)."""
ROUNDS = 10


def bench_registry() -> Registry:
    registry = Registry()

    @registry.skill(timeout=None)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return registry


def state_fields(state: AgentState) -> dict[str, Any]:
    """What both servers put in a run's result, serialized the same way."""
    return {
        "outcome": state.outcome,
        "answer": state.final_answer,
        "state": STATE_ADAPTER.dump_python(state, mode="json"),
    }


# -- the HTTP + JSON server, run as a child process of this script ------------------------------


def serve_http(port: int, mock: str) -> None:
    agent = Agent(MockModel.from_file(mock), bench_registry())
    lock = threading.Lock()  # one model: one run at a time, like the daemon
    started = time.monotonic()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Without this, Nagle and delayed ACKs add ~40 ms to each reply and the comparison
            # would measure a TCP setting, not HTTP + JSON.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _reply(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._reply({"state": "ready", "uptime_s": time.monotonic() - started})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length))
            with lock:
                model = agent.model
                if isinstance(model, MockModel):
                    model.reset()
                state = agent.run(request["query"], max_iterations=12)
                self._reply({"id": request["id"], "kind": "result", **state_fields(state)})

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.serve_forever()


# -- measuring ---------------------------------------------------------------------------------


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.99) - 1] * 1000


def timed(call: Any, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def cpu_ns(pid: int) -> int:
    """CPU time so far of every thread of process ``pid``, in ns."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended while we looked
    return total


def wait_port(port: int) -> None:
    until = time.monotonic() + 30
    while time.monotonic() < until:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--http-server", nargs=2, metavar=("PORT", "MOCK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.http_server:
        serve_http(int(args.http_server[0]), args.http_server[1])
        return 0
    count = args.requests

    with tempfile.TemporaryDirectory() as workdir:
        mock, skills = write_add_run(Path(workdir))
        config = Path(workdir) / "edge.toml"
        config.write_text(skills)
        zmq_port, http_port = free_port(), free_port()
        daemon = subprocess.Popen(
            serve_command(config=config, mock=mock, endpoint=f"tcp://127.0.0.1:{zmq_port}"),
            env={**os.environ, "XDG_STATE_HOME": workdir},  # its run journal, not the user's
        )
        web = subprocess.Popen(
            [sys.executable, "-m", __spec__.name, "--http-server", str(http_port), str(mock)],
            cwd=CHECKOUT,
        )
        context: zmq.Context[Any] = zmq.Context()
        try:
            wait_port(zmq_port)
            wait_port(http_port)
            report = measure(context, zmq_port, http_port, (daemon.pid, web.pid), count)
        finally:
            context.destroy(linger=0)
            for process in (daemon, web):
                process.terminate()
                process.wait(30)
    print_report(report, count)
    met = (
        report["daemon_overhead_ms"] <= BUDGET_MS
        and report["rss_growth_kib"] < 10_240
        and report["status_ratio"] <= RATIO_GOAL
        and report["run_ratio"] <= RATIO_GOAL
    )
    return 0 if met else 1


def measure(
    context: zmq.Context[Any], zmq_port: int, http_port: int, pids: tuple[int, int], count: int
) -> dict[str, Any]:
    daemon_pid, http_pid = pids
    sock = context.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{zmq_port}")
    serial = iter(range(10**9))

    def zmq_call(op: str, **fields: Any) -> dict[str, Any]:
        sock.send(msgpack.packb({"v": 1, "id": str(next(serial)), "op": op, **fields}))
        reply: dict[str, Any] = msgpack.unpackb(sock.recv())
        if reply["kind"] != "result":
            raise RuntimeError(reply)
        return reply

    connection = http.client.HTTPConnection("127.0.0.1", http_port)
    connection.connect()
    assert connection.sock is not None
    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def http_call(method: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        connection.request(method, "/", body=data, headers={"Content-Type": "application/json"})
        reply: dict[str, Any] = json.loads(connection.getresponse().read())
        return reply

    while zmq_call("status")["state"] != "ready":
        time.sleep(0.05)
    # The agent run by itself, in this process: the work both servers wrap.
    agent = Agent(MockModel(SCRIPT), bench_registry())

    def bare_run() -> None:
        model = agent.model
        if isinstance(model, MockModel):
            model.reset()
        state_fields(agent.run(QUERY, max_iterations=12))

    for _ in range(100):  # warm both servers, the agent and the caches
        zmq_call("run", query=QUERY)
        http_call("POST", {"id": "w", "query": QUERY})
        bare_run()
    assert zmq_call("run", query=QUERY)["answer"] == ANSWER
    assert http_call("POST", {"id": "x", "query": QUERY})["answer"] == ANSWER

    rss_before = rss_kib(daemon_pid)
    # Interleaved rounds: each round times a batch of every kind in turn, so a load that comes
    # and goes on a shared machine falls on both servers alike; each figure is the median over
    # the rounds of that round's median.
    kinds: dict[str, Any] = {
        "bare_run": bare_run,
        "zmq_status": lambda: zmq_call("status"),
        "http_status": lambda: http_call("GET"),
        "zmq_run": lambda: zmq_call("run", query=QUERY),
        "http_run": lambda: http_call("POST", {"id": "r", "query": QUERY}),
    }
    # The CPU each server spends (all its threads), beside the round trips: the daemon's own
    # cost, which a loaded or an idle machine's thread wake-ups do not move.
    owner = {"bare_run": os.getpid(), "zmq_status": daemon_pid, "zmq_run": daemon_pid}
    batch = max(1, count // ROUNDS)
    samples: dict[str, list[float]] = {kind: [] for kind in kinds}
    medians: dict[str, list[float]] = {kind: [] for kind in kinds}
    cpu: dict[str, list[float]] = {kind: [] for kind in kinds}
    for round_ in range(ROUNDS):
        order = list(kinds)
        if round_ % 2:
            order.reverse()
        for kind in order:
            pid = owner.get(kind, http_pid)
            before = cpu_ns(pid)
            timing = timed(kinds[kind], batch)
            cpu[kind].append((cpu_ns(pid) - before) / batch / 1e6)
            samples[kind].extend(timing)
            medians[kind].append(statistics.median(timing) * 1000)
    results: dict[str, Any] = dict(samples)
    results["medians"] = {kind: statistics.median(values) for kind, values in medians.items()}
    results["cpu_ms"] = {kind: statistics.median(values) for kind, values in cpu.items()}
    started = time.perf_counter()
    timed(kinds["zmq_run"], count)
    results["zmq_rps"] = count / (time.perf_counter() - started)
    started = time.perf_counter()
    timed(kinds["http_run"], count)
    results["http_rps"] = count / (time.perf_counter() - started)
    results["rss_before_kib"] = rss_before
    results["rss_after_kib"] = rss_kib(daemon_pid)
    results["rss_growth_kib"] = results["rss_after_kib"] - rss_before
    m = results["medians"]
    results["daemon_overhead_ms"] = m["zmq_run"] - m["bare_run"]
    results["status_ratio"] = m["zmq_status"] / m["http_status"]
    results["run_ratio"] = (m["zmq_run"] - m["bare_run"]) / max(m["http_run"] - m["bare_run"], 1e-9)
    sock.close()
    connection.close()
    return results


def print_report(r: dict[str, Any], count: int) -> None:
    print(f"edge-agent IPC benchmark: {count} sequential requests each, one client, loopback TCP")
    print(f"{'':22}{'p50 ms':>10}{'p99 ms':>10}")
    rows = [
        ("agent run, in-process", r["bare_run"]),
        ("status  zmq+msgpack", r["zmq_status"]),
        ("status  http+json", r["http_status"]),
        ("run     zmq+msgpack", r["zmq_run"]),
        ("run     http+json", r["http_run"]),
    ]
    for name, samples in rows:
        p50, p99 = percentiles(samples)
        print(f"{name:22}{p50:>10.3f}{p99:>10.3f}")
    m = r["medians"]
    zs, hs, zr, hr, bare = (
        m[k] for k in ("zmq_status", "http_status", "zmq_run", "http_run", "bare_run")
    )
    print(
        f"medians of {ROUNDS} interleaved rounds' medians, ms: status zmq {zs:.3f}, http "
        f"{hs:.3f}; run zmq {zr:.3f}, http {hr:.3f}; agent run alone {bare:.3f}"
    )
    status_ratio, run_ratio = r["status_ratio"], r["run_ratio"]
    print(
        f"status, zmq / http (the whole request is overhead; goal <= {RATIO_GOAL}): "
        f"{status_ratio:.2f}x {'PASS' if status_ratio <= RATIO_GOAL else 'FAIL'}"
    )
    print(
        f"run overhead (round trip - agent run), zmq / http (goal <= {RATIO_GOAL}): "
        f"{run_ratio:.2f}x {'PASS' if run_ratio <= RATIO_GOAL else 'FAIL'}"
    )
    print(f"run round trip, zmq / http: {zr / hr:.2f}x")
    c = r["cpu_ms"]
    run_cpu = (c["zmq_run"] - c["bare_run"]) / max(c["http_run"] - c["bare_run"], 1e-9)
    print(
        f"server CPU per request (all threads), us: status zmq {c['zmq_status'] * 1000:.0f}, "
        f"http {c['http_status'] * 1000:.0f} ({c['zmq_status'] / c['http_status']:.2f}x); "
        f"run over the agent run's {c['bare_run'] * 1000:.0f}: zmq "
        f"{(c['zmq_run'] - c['bare_run']) * 1000:.0f}, http "
        f"{(c['http_run'] - c['bare_run']) * 1000:.0f} ({run_cpu:.2f}x)"
    )
    print(
        f"run throughput: zmq {r['zmq_rps']:.0f}/s, http {r['http_rps']:.0f}/s "
        f"({r['zmq_rps'] / r['http_rps']:.2f}x)"
    )
    print(
        f"daemon overhead per run (run round trip - agent run): {zr - bare:.3f} ms "
        f"(http: {hr - bare:.3f} ms); budget {BUDGET_MS} ms: "
        f"{'PASS' if zr - bare <= BUDGET_MS else 'FAIL'}"
    )
    print(
        f"daemon RSS across {count} runs: {r['rss_before_kib'] / 1024:.1f} MiB -> "
        f"{r['rss_after_kib'] / 1024:.1f} MiB ({r['rss_growth_kib']:+d} KiB)"
    )
    print(f"(cpu cores: {os.cpu_count()})")


if __name__ == "__main__":
    sys.exit(main())
