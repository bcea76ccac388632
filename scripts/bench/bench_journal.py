"""What the run journal costs: a mock run's round trip with the journal on and off, and its size.

Two daemons run side by side as processes, identical but for ``[journal] enabled``, each with the
same scripted mock model (a skill call, then an answer), so the model costs nothing and what is
left is the daemon's own work per run. The two are timed in interleaved rounds (which goes first
alternates); the ratio is the median of the rounds' ratios, so a round that the machine's load
slowed is slow on both sides. Then the
journal's file is measured after the runs: bytes per 1,000 runs, the WAL folded back in.

Bounded by keep_runs: a third daemon, with ``keep_runs = 100``, answers runs of 4 KB queries as
fast as one client sends them (the journal commits them in batches of 0.2 s, each past keep_runs
on its own); its file and WAL, as they are on the disk, are measured after 100 runs and after
1,000, and the ratio is reported.

Budgets (issue 21): the round trip with the journal at most 1.1x, and under 1 ms more, than
without. Issue 37: the file after a burst of 1,000 runs with keep_runs 100 at most 1.5x its size
after 100. Exits 1 when one is missed.

    .venv/bin/python -m scripts.bench.bench_journal [--rounds 20] [--runs 50] [--burst 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from edge_agentd.client.askoptions import AskOptions
from edge_agentd.client.zmqclient import Client, DaemonError
from scripts.bench.add_run import ANSWER, QUERY, write_add_run
from scripts.testbed.serve_command import serve_command

RATIO_GOAL = 1.1
EXTRA_MS_GOAL = 1.0
BOUNDED_KEEP_RUNS = 100
BOUNDED_GOAL = 1.5
BIG_QUERY = QUERY + " " + "Please answer briefly. " * 170  # about 4 KB, under max_query_chars


def start(
    workdir: Path, name: str, journal: bool, keep_runs: int = 10_000
) -> tuple[subprocess.Popen[bytes], str, Path]:
    mock, skills = write_add_run(workdir)
    path = workdir / f"{name}.sqlite3"
    config = workdir / f"{name}.toml"
    config.write_text(
        skills
        + f"[journal]\nenabled = {'true' if journal else 'false'}\npath = {json.dumps(str(path))}\n"
        + f"keep_runs = {keep_runs}\n"
    )
    endpoint = f"ipc://{workdir}/{name}.sock"
    process = subprocess.Popen(
        serve_command(config=config, mock=mock, endpoint=endpoint),
    )
    with Client(endpoint, timeout=2.0, retries=0) as client:
        until = time.monotonic() + 60
        while time.monotonic() < until:
            try:
                if client.status().get("state") == "ready":
                    break
            except DaemonError:  # not up yet: asked again
                time.sleep(0.1)
        else:
            raise TimeoutError(f"the {name} daemon did not get ready")
    return process, endpoint, path


def round_trips(client: Client, count: int, query: str = QUERY) -> list[float]:
    samples = []
    for _ in range(count):
        begun = time.perf_counter()
        reply = client.run(query, AskOptions(timeout=30.0))
        samples.append(time.perf_counter() - begun)
        if reply.get("answer") != ANSWER:
            raise RuntimeError(f"unexpected reply: {reply}")
    return samples


def file_bytes(path: Path) -> int:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
    return int(pages * size)


def on_disk(path: Path) -> int:
    """The journal's bytes as they are on the disk: the file and its WAL, nothing folded back."""
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def settled(client: Client, runs: int) -> None:
    """Wait until the journal has written every run so far (its batches commit within 0.2 s)."""
    until = time.monotonic() + 30
    while time.monotonic() < until:
        journal = client.request("status")["journal"]
        if journal["counters"].get("writes", 0) >= 2 * runs:  # each run: queued, then ended
            return
        time.sleep(0.1)
    raise TimeoutError("the journal did not write every run")


def bounded(endpoint: str, path: Path, burst: int) -> dict[str, Any]:
    """The file's size after keep_runs runs, and after a burst of ``burst`` runs in all."""
    with Client(endpoint, timeout=30) as client:
        round_trips(client, BOUNDED_KEEP_RUNS, BIG_QUERY)
        settled(client, BOUNDED_KEEP_RUNS)
        at_keep = on_disk(path)
        round_trips(client, burst - BOUNDED_KEEP_RUNS, BIG_QUERY)
        settled(client, burst)
        after = on_disk(path)
        journal = client.request("status")["journal"]
    return {
        "bounded_at_keep": at_keep,
        "bounded_after": after,
        "bounded_ratio": after / at_keep,
        "bounded_runs": journal["runs"],
        "bounded_pruned": journal["counters"].get("pruned", 0),
        "burst": burst,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--runs", type=int, default=50, help="runs per round and side")
    parser.add_argument("--size-runs", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=1000, help="runs in all with keep_runs 100")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        on, on_endpoint, on_path = start(workdir, "on", journal=True)
        off, off_endpoint, _ = start(workdir, "off", journal=False)
        kept, kept_endpoint, kept_path = start(
            workdir, "bounded", journal=True, keep_runs=BOUNDED_KEEP_RUNS
        )
        try:
            results = measure(args, on_endpoint, off_endpoint, on_path)
            results.update(bounded(kept_endpoint, kept_path, args.burst))
        finally:
            for process in (on, off, kept):
                process.send_signal(signal.SIGTERM)
            for process in (on, off, kept):
                process.wait(30)
    return report(results)


def measure(
    args: argparse.Namespace, on_endpoint: str, off_endpoint: str, on_path: Path
) -> dict[str, Any]:
    medians: dict[str, list[float]] = {"on": [], "off": []}
    with Client(on_endpoint, timeout=30) as on, Client(off_endpoint, timeout=30) as off:
        clients = {"on": on, "off": off}
        for client in clients.values():
            round_trips(client, 20)  # warm both up
        for number in range(args.rounds):
            order = ("on", "off") if number % 2 == 0 else ("off", "on")
            for name in order:
                medians[name].append(statistics.median(round_trips(clients[name], args.runs)))
        before = file_bytes(on_path)
        runs_before = on.request("status")["journal"]["runs"]
        round_trips(on, args.size_runs)
        time.sleep(0.5)  # the journal's thread writes the last runs
        after = file_bytes(on_path)
        runs_after = on.request("status")["journal"]["runs"]
    added = max(1, runs_after - runs_before)
    pairs = list(zip(medians["on"], medians["off"], strict=True))
    return {
        "on_ms": statistics.median(medians["on"]) * 1000,
        "off_ms": statistics.median(medians["off"]) * 1000,
        # Paired by round: a round that the machine's load slowed is slow on both sides.
        "ratio": statistics.median(on / off for on, off in pairs),
        "extra_ms": statistics.median(on - off for on, off in pairs) * 1000,
        "bytes_per_1000": (after - before) * 1000 / added,
        "file_bytes": after,
        "runs_kept": runs_after,
    }


def report(results: dict[str, Any]) -> int:
    on_ms, off_ms = results["on_ms"], results["off_ms"]
    ratio, extra = results["ratio"], results["extra_ms"]
    print(f"mock run round trip, journal off: {off_ms:.3f} ms (median of round medians)")
    print(f"mock run round trip, journal on:  {on_ms:.3f} ms")
    print(
        f"ratio on/off (median of the rounds' ratios): {ratio:.3f}x (goal <= {RATIO_GOAL}x);"
        f" extra: {extra:+.3f} ms (goal < {EXTRA_MS_GOAL} ms)"
    )
    print(
        f"journal size: {results['bytes_per_1000'] / 1024:.0f} KiB per 1,000 runs "
        f"({results['file_bytes'] / 1024:.0f} KiB for {results['runs_kept']} runs)"
    )
    print(
        f"bounded, keep_runs {BOUNDED_KEEP_RUNS}, 4 KB queries: file + WAL after "
        f"{BOUNDED_KEEP_RUNS} runs {results['bounded_at_keep'] / 1024:.0f} KiB, after a burst of "
        f"{results['burst']} {results['bounded_after'] / 1024:.0f} KiB: "
        f"{results['bounded_ratio']:.2f}x (goal <= {BOUNDED_GOAL}x); "
        f"{results['bounded_runs']} runs kept, {results['bounded_pruned']} counted pruned"
    )
    ok = ratio <= RATIO_GOAL and extra < EXTRA_MS_GOAL and results["bounded_ratio"] <= BOUNDED_GOAL
    print("PASS" if ok else "FAIL: the journal costs more than its budget")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
