"""The client's cold start, side by side with ``python -c "import zmq, msgpack"``.

``edge-agent ask``, ``status`` and ``skills`` are timed end to end (process start to exit) against
a ``mock:`` daemon on a private ipc socket, interleaved with the baseline so that a busy machine
slows both alike. Each run's wall time and CPU time (user + system, of the process alone: on a
loaded machine it is the steadier figure) are kept. The goal (issue 12) is a median of at most
1.3x the baseline's; the verdict is on CPU time.

    .venv/bin/python -m scripts.bench.bench_cli_start [--runs 30]

Exits 1 when a command misses the goal. A benchmark, not a test: the figures depend on the
machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL = 1.3
BIN = Path(sys.executable).parent
CLIENT = str(BIN / "edge-agent")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(command: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run."""
    cpu = _cpu()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed, _cpu() - cpu


def _wait_ready(endpoint: str, daemon: subprocess.Popen[bytes]) -> None:
    until = time.monotonic() + 60
    while time.monotonic() < until:
        if daemon.poll() is not None:
            raise SystemExit(f"the mock daemon exited with {daemon.returncode}")
        done = subprocess.run(
            [CLIENT, "status", "--json", "--endpoint", endpoint], capture_output=True, check=False
        )
        if done.returncode == 0 and json.loads(done.stdout).get("state") == "ready":
            return
        time.sleep(0.2)
    raise SystemExit("the mock daemon did not become ready")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        mock = Path(directory) / "mock.json"
        mock.write_text(json.dumps([json.dumps({"final_answer": "It is 21 C."})]))
        endpoint = f"ipc://{directory}/agent.sock"
        daemon = subprocess.Popen(
            [CLIENT, "serve", "--model", f"mock:{mock}", "--endpoint", endpoint],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "XDG_STATE_HOME": directory},  # its journal, not the user's
        )
        try:
            _wait_ready(endpoint, daemon)
            commands = {
                'python -c "import zmq, msgpack"': [sys.executable, "-c", "import zmq, msgpack"],
                "edge-agent status": [CLIENT, "status", "--endpoint", endpoint],
                "edge-agent skills": [CLIENT, "skills", "--endpoint", endpoint],
                "edge-agent ask": [CLIENT, "ask", "how warm?", "--endpoint", endpoint],
            }
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
            for command in commands.values():
                _time(command)  # warm the page cache
            for _ in range(args.runs):
                for name, command in commands.items():
                    times[name].append(_time(command))
        finally:
            daemon.terminate()
            daemon.wait(30)
    base = times['python -c "import zmq, msgpack"']
    base_wall = statistics.median(wall for wall, _ in base)
    base_cpu = statistics.median(cpu for _, cpu in base)
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load {load:.1f}, {args.runs} interleaved runs each")
    print(f"{'':34s} {'wall median (min-max)':>28s} {'CPU median':>16s}")
    missed = False
    for name, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        ratio = cpu / base_cpu
        verdict = "" if name.startswith("python") else ("ok" if ratio <= GOAL else "MISSED")
        missed |= verdict == "MISSED"
        print(
            f"{name:34s} {wall * 1000:6.1f} ms ({min(w for w, _ in samples) * 1000:5.1f}-"
            f"{max(w for w, _ in samples) * 1000:5.1f}) "
            f"{wall / base_wall:4.2f}x {cpu * 1000:6.1f} ms {ratio:4.2f}x {verdict}"
        )
    print(f"goal: each client command's CPU time at most {GOAL}x the baseline's")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
