"""Does a memory change slow a question? Two ``edge-agent serve`` daemons with the embedded model,
this tree's and a checkout of the code before (``--base DIR``), asked the same questions in turn.

Both run at once on the same cores, so a load that comes and goes slows both alike; the order
within each pair alternates. Reported: each side's median seconds per question and the ratio
(this tree / base), with RSS over the model file and KV cache at the end.

Usage: python -m scripts.bench.bench_memory_ab --base /tmp/base [--questions 30]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from edge_agentd.client.askoptions import AskOptions
from edge_agentd.client.zmqclient import Client
from scripts.bench.bench_memory import MIB, QUERIES, memory
from scripts.bench.bench_restart import serving


def tree_env(base: Path, work: Path, name: str) -> dict[str, str]:
    """Import ``edge_agentd`` from the tree at ``base``, laid out as installed and compiled first
    (as bench_mcp.py does), so both sides are imported the same way."""
    for folder in ("daemon", "skills"):
        compileall.compile_dir(base / folder, quiet=1)
    tree = work / f"{name}-tree" / "edge_agentd"
    tree.mkdir(parents=True, exist_ok=True)
    for entry in (base / "daemon").iterdir():
        (tree / entry.name).symlink_to(entry)
    (tree / "skills").symlink_to(base / "skills")
    return {"PYTHONPATH": str(tree.parent)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", type=Path, required=True, help="a checkout of the code before")
    parser.add_argument("--questions", type=int, default=30)
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parents[2]
    seconds: dict[str, list[float]] = {"base": [], "this": []}
    with tempfile.TemporaryDirectory() as work, contextlib.ExitStack() as stack:
        clients, pids = {}, {}
        for name, tree in (("base", args.base), ("this", here)):
            saved = dict(os.environ)
            os.environ.update(tree_env(tree, Path(work), name))
            try:
                process, endpoint, _ = stack.enter_context(
                    serving("default", 4096, Path(work) / f"cache-{name}")
                )
            finally:
                os.environ.clear()
                os.environ.update(saved)
            clients[name] = stack.enter_context(Client(endpoint, timeout=600))
            pids[name] = process.pid
        for i in range(args.questions):
            order = ("base", "this") if i % 2 == 0 else ("this", "base")
            for name in order:
                started = time.perf_counter()
                question = QUERIES[i % len(QUERIES)] + f" (#{i})"
                clients[name].run(question, AskOptions(max_iterations=2))
                seconds[name].append(time.perf_counter() - started)
                print(f"  {i} {name} {seconds[name][-1]:.2f} s", flush=True)
        fixed = {
            name: (info["file_size_bytes"] + (info.get("kv_cache_bytes") or 0)) / MIB
            for name, info in ((n, c.status()["model"]) for n, c in clients.items())
        }
        over = {name: memory(pid)["VmRSS"] - fixed[name] for name, pid in pids.items()}
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    for name in ("base", "this"):
        print(
            f"  {name:<5} median {medians[name]:.2f} s over {len(seconds[name])} questions, "
            f"RSS - (file + KV) {over[name]:.1f} MiB"
        )
    print(f"  ratio this/base: {medians['this'] / medians['base']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
