"""What the Model Context Protocol server costs (issue 43), measured side by side.

1. **A tool call's round trip.** The same skill (``now``) called over ZeroMQ's ``call`` op and
   over MCP streamable HTTP, interleaved call by call: over MCP as Home Assistant calls (a new
   session, initialized, one ``tools/call``, closed) and on one warm session. Then the time to
   the tool list on a cold session (new session, initialize, ``tools/list``). p50 and p99 each.
2. **The idle cost of the listener.** Daemons with ``[mcp]`` on and off (mock model), started in
   turn, left idle: resident memory (VmRSS) and CPU seconds over an idle window.
3. **``[mcp]`` off against the code before it** (``--base DIR``, a checkout of the commit before
   the server; its package is imported from there): start-up time to ``ready`` and resident
   memory, interleaved. The budget: unchanged within noise (median ratio at most 1.1).

Exits 1 when a budget is missed.

    .venv/bin/python -m scripts.bench.bench_mcp [--calls 200] [--idle-s 20] [--base /tmp/base]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from edge_agentd.client.errors import DaemonError
from edge_agentd.client.zmqclient import Client
from scripts.testbed.processes import cpu_seconds, rss_kib
from scripts.testbed.serve_command import serve_command

RATIO_GOAL = 1.1
MOCK = ['{"final_answer": "I cannot tell."}']


def start(work: Path, name: str, mcp: bool, env: dict[str, str] | None = None) -> tuple[Any, str]:
    mock = work / "mock.json"
    mock.write_text(json.dumps(MOCK), encoding="utf-8")
    config = work / f"{name}.toml"
    config.write_text(
        "[daemon]\nshutdown_grace_s = 0.05\n" + ("[mcp]\nport = 0\n" if mcp else ""),
        encoding="utf-8",
    )
    endpoint = f"ipc://{work}/{name}.sock"
    process = subprocess.Popen(
        serve_command(config=config, mock=mock, endpoint=endpoint),
        env={**os.environ, "XDG_STATE_HOME": str(work / f"{name}-state"), **(env or {})},
    )
    return process, endpoint


def wait_ready(endpoint: str, process: Any, timeout: float = 60.0) -> float:
    """Seconds from now until ``status`` says ready."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if process.poll() is not None:
            raise RuntimeError(f"the daemon exited with {process.returncode}")
        if Path(endpoint[len("ipc://") :]).exists():
            try:
                with Client(endpoint, timeout=0.5, retries=0) as client:
                    if client.status()["state"] == "ready":
                        return time.monotonic() - began
            except DaemonError:  # not answering yet: asked again
                time.sleep(0.005)
                continue
        time.sleep(0.005)
    raise TimeoutError("the daemon did not become ready")


def stop(process: Any) -> None:
    process.terminate()
    process.wait(30)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def line(name: str, values: list[float]) -> str:
    return f"{name:<34} p50 {pct(values, 0.5):8.2f} ms   p99 {pct(values, 0.99):8.2f} ms"


async def timed(use: Callable[[], Any]) -> float:
    began = time.perf_counter()
    await use()
    return (time.perf_counter() - began) * 1000


async def round_trips(url: str, endpoint: str, calls: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"zmq": [], "mcp_session_per_call": [], "mcp_warm": []}
    times["mcp_cold_list"] = []
    client = Client(endpoint, timeout=10)

    async def fresh(use: Callable[[ClientSession], Any]) -> None:
        async with (
            streamable_http_client(url) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await use(session)

    async with (
        streamable_http_client(url) as (read, write, *_),
        ClientSession(read, write) as warm,
    ):
        await warm.initialize()
        await warm.call_tool("now", {})
        for _ in range(calls):

            async def zmq_call() -> None:
                await anyio.to_thread.run_sync(
                    lambda: client.request("call", skill="now", arguments={})
                )

            times["zmq"].append(await timed(zmq_call))
            times["mcp_session_per_call"].append(
                await timed(lambda: fresh(lambda s: s.call_tool("now", {})))
            )
            times["mcp_warm"].append(await timed(lambda: warm.call_tool("now", {})))
            times["mcp_cold_list"].append(await timed(lambda: fresh(lambda s: s.list_tools())))
    client.close()
    return times


def idle(work: Path, window_s: float, rounds: int) -> dict[str, list[tuple[int, float]]]:
    got: dict[str, list[tuple[int, float]]] = {"off": [], "on": []}
    for index in range(rounds * 2):
        name = "on" if index % 2 else "off"
        process, endpoint = start(work, f"idle-{name}-{index}", name == "on")
        try:
            wait_ready(endpoint, process)
            time.sleep(2.0)  # settle: the loading thread ends, the first tool-list watch sleeps
            before = cpu_seconds(process.pid)
            time.sleep(window_s)
            used = cpu_seconds(process.pid) - before
            got[name].append((rss_kib(process.pid), used))
        finally:
            stop(process)
    return got


def tree_env(base: Path, work: Path, name: str) -> dict[str, str]:
    """Import ``edge_agentd`` from the checkout at ``base`` (a tree laid out as installed, put
    first on PYTHONPATH: both sides are imported the same way, so neither pays another path)."""
    # Both compiled first: with PYTHONDONTWRITEBYTECODE set, a tree never compiled would pay the
    # compiler at every start, and the other not.
    for folder in ("daemon", "skills"):
        compileall.compile_dir(base / folder, quiet=1)
    tree = work / f"{name}-tree" / "edge_agentd"
    tree.mkdir(parents=True, exist_ok=True)
    for entry in (base / "daemon").iterdir():
        link = tree / entry.name
        if not link.exists():
            link.symlink_to(entry)
    if not (tree / "skills").exists():
        (tree / "skills").symlink_to(base / "skills")
    return {"PYTHONPATH": str(tree.parent)}


def startup(work: Path, base: Path, rounds: int) -> dict[str, list[tuple[float, int]]]:
    envs = {
        "base": tree_env(base, work, "base"),
        "off": tree_env(Path(__file__).resolve().parents[2], work, "off"),
    }
    got: dict[str, list[tuple[float, int]]] = {"base": [], "off": []}
    for index in range(rounds * 2):
        name = ("off", "base")[index % 2] if (index // 2) % 2 else ("base", "off")[index % 2]
        process, endpoint = start(work, f"start-{name}-{index}", False, envs[name])
        try:
            seconds = wait_ready(endpoint, process)
            time.sleep(1.0)
            got[name].append((seconds, rss_kib(process.pid)))
        finally:
            stop(process)
    return got


def calls_and_idle(work: Path, args: argparse.Namespace) -> None:
    process, endpoint = start(work, "calls", True)
    try:
        wait_ready(endpoint, process)
        with Client(endpoint, timeout=10) as client:
            url = client.status()["mcp"]["url"]
        times = anyio.run(round_trips, url, endpoint, args.calls)
    finally:
        stop(process)
    print(f"== one tool call (skill `now`), {args.calls} interleaved rounds")
    for name, values in times.items():
        print(line(name, values))
    zmq50 = pct(times["zmq"], 0.5)
    for name in ("mcp_session_per_call", "mcp_warm"):
        ratio = pct(times[name], 0.5) / zmq50
        print(f"{name} / zmq at p50: {ratio:.1f}x")
    print(f"== idle, [mcp] on against off, {args.rounds} rounds of {args.idle_s:g} s")
    got = idle(work, args.idle_s, args.rounds)
    for name, samples in got.items():
        rss = statistics.median(s[0] for s in samples) / 1024
        cpu = statistics.median(s[1] for s in samples) / args.idle_s * 100
        print(f"[mcp] {name:<4} RSS {rss:6.1f} MiB   CPU {cpu:.3f} % of a core")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", type=Path, help="a checkout of the code before [mcp]")
    parser.add_argument("--only-base", action="store_true", help="only the comparison with --base")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as place:
        work = Path(place)
        if not args.only_base:
            calls_and_idle(work, args)
        if args.base is not None:
            print(f"== [mcp] off against the code before it ({args.base}), {args.rounds} rounds")
            starts = startup(work, args.base, args.rounds)
            for name, samples in starts.items():
                seconds = statistics.median(s[0] for s in samples)
                rss = statistics.median(s[1] for s in samples) / 1024
                print(f"{name:<5} ready in {seconds * 1000:7.1f} ms   RSS {rss:6.1f} MiB")
            time_ratio = statistics.median(s[0] for s in starts["off"]) / statistics.median(
                s[0] for s in starts["base"]
            )
            rss_ratio = statistics.median(s[1] for s in starts["off"]) / statistics.median(
                s[1] for s in starts["base"]
            )
            print(f"off / base: start-up {time_ratio:.2f}x, RSS {rss_ratio:.3f}x")
            if time_ratio > RATIO_GOAL or rss_ratio > RATIO_GOAL:
                print(f"MISSED: [mcp] off must stay within {RATIO_GOAL}x of the code before it")
                ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
