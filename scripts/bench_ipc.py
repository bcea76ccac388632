"""What the daemon's IPC costs: ZeroMQ + msgpack beside a minimal HTTP + JSON server, same work.

Both servers run as separate processes and do identical work per request: the same Agent, model
script (a scripted mock, so the model costs nothing) and registry. The client measures round trips
of ``status`` and ``run``, sequential throughput, and the agent run alone in-process, so that the
daemon's own cost per request (round trip minus the run itself) can be held to the 1 ms budget.
It also reads the daemon's resident memory across 1,000 runs, which must stay flat.

    .venv/bin/python scripts/bench_ipc.py [--requests 1000]
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

from edge_agent.agent.events import STATE_ADAPTER, AgentState
from edge_agent.agent.loop import Agent
from edge_agent.agent.registry import Registry
from edge_agent.model.scripted import MockModel

SCRIPT = [
    '{"skill_name": "add", "arguments": {"a": 2, "b": 3}}',
    '{"final_answer": "2 + 3 = 5"}',
]
QUERY = "What is 2 + 3?"
BUDGET_MS = 1.0


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


def plugin_source() -> str:
    return (
        "def register(registry):\n"
        "    @registry.skill(timeout=None)\n"
        "    def add(a: int, b: int) -> int:\n"
        '        """Add two integers."""\n'
        "        return a + b\n"
    )


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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


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


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


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
        mock = Path(workdir) / "mock.json"
        mock.write_text(json.dumps(SCRIPT))
        plugins = Path(workdir) / "plugins"
        plugins.mkdir()
        (plugins / "bench_add.py").write_text(plugin_source())
        config = Path(workdir) / "edge.toml"
        config.write_text(
            "[skills]\nbuiltins = false\nentry_points = false\n"
            f"directories = [{json.dumps(str(plugins))}]\n"
        )
        zmq_port, http_port = free_port(), free_port()
        daemon = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "edge_agent.cli",
                "serve",
                "--config",
                str(config),
                "--model",
                f"mock:{mock}",
                "--endpoint",
                f"tcp://127.0.0.1:{zmq_port}",
                "--log-level",
                "WARNING",
            ],
        )
        web = subprocess.Popen(
            [sys.executable, __file__, "--http-server", str(http_port), str(mock)]
        )
        context: zmq.Context[Any] = zmq.Context()
        try:
            wait_port(zmq_port)
            wait_port(http_port)
            report = measure(context, zmq_port, http_port, daemon.pid, count)
        finally:
            context.destroy(linger=0)
            for process in (daemon, web):
                process.terminate()
                process.wait(30)
    print_report(report, count)
    return (
        0 if report["daemon_overhead_ms"] <= BUDGET_MS and report["rss_growth_kib"] < 10_240 else 1
    )


def measure(
    context: zmq.Context[Any], zmq_port: int, http_port: int, daemon_pid: int, count: int
) -> dict[str, Any]:
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
    assert zmq_call("run", query=QUERY)["answer"] == "2 + 3 = 5"
    assert http_call("POST", {"id": "x", "query": QUERY})["answer"] == "2 + 3 = 5"

    rss_before = rss_kib(daemon_pid)
    results: dict[str, Any] = {}
    results["bare_run"] = timed(bare_run, count)
    results["zmq_status"] = timed(lambda: zmq_call("status"), count)
    results["http_status"] = timed(lambda: http_call("GET"), count)
    started = time.perf_counter()
    results["zmq_run"] = timed(lambda: zmq_call("run", query=QUERY), count)
    results["zmq_rps"] = count / (time.perf_counter() - started)
    started = time.perf_counter()
    results["http_run"] = timed(lambda: http_call("POST", {"id": "r", "query": QUERY}), count)
    results["http_rps"] = count / (time.perf_counter() - started)
    results["rss_before_kib"] = rss_before
    results["rss_after_kib"] = rss_kib(daemon_pid)
    results["rss_growth_kib"] = results["rss_after_kib"] - rss_before
    results["daemon_overhead_ms"] = (
        percentiles(results["zmq_run"])[0] - percentiles(results["bare_run"])[0]
    )
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
    zs, hs = percentiles(r["zmq_status"])[0], percentiles(r["http_status"])[0]
    zr, hr = percentiles(r["zmq_run"])[0], percentiles(r["http_run"])[0]
    bare = percentiles(r["bare_run"])[0]
    print(f"status round trip, http / zmq:        {hs / zs:.2f}x")
    print(f"run round trip, http / zmq:           {hr / zr:.2f}x")
    print(
        f"run throughput: zmq {r['zmq_rps']:.0f}/s, http {r['http_rps']:.0f}/s "
        f"({r['zmq_rps'] / r['http_rps']:.2f}x)"
    )
    print(
        f"daemon overhead per run (p50 run round trip - p50 agent run): {zr - bare:.3f} ms "
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
