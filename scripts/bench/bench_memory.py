"""Benchmark the daemon's memory: RSS over the model file and KV cache after 100 asks (goal
<= 77 MiB), how it moves over many more, and what each part costs.

``edge-agent serve`` is started as systemd would start it (see bench_restart.py) and asked the
same questions again and again through the client; its RSS, and the anonymous and file-backed
parts of it, are read from /proc. The breakdown of the parts is measured in this process, step
by step: the interpreter, the imports, llama.cpp's vocabulary tables, the model load, the
context (KV cache and compute buffer) and a warm-up.

Usage: python -m scripts.bench.bench_memory [--model default|PATH] [--asks 1000] [--n-ctx 4096]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from edge_agentd.client.askoptions import AskOptions
from edge_agentd.client.zmqclient import Client
from scripts.bench import CHECKOUT
from scripts.bench.bench_restart import serving

QUERIES = [
    "What is the CPU temperature?",
    "How long has the system been up?",
    "What time is it?",
    "How much memory is free?",
]
MIB = 1024 * 1024


def memory(pid: int | str = "self") -> dict[str, float]:
    """VmRSS, RssAnon and RssFile of a process, in MiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "RssAnon", "RssFile"):
            found[key] = int(line.split()[1]) / 1024
    return found


def mappings(pid: int) -> dict[str, float]:
    """Resident MiB per kind of mapping, from /proc/PID/smaps: the model file, llama.cpp's
    buffers (the largest anonymous mapping: KV cache, compute and output buffers), glibc's
    thread arenas (anonymous, 64 MiB-aligned), the main heap, shared libraries, and the other
    anonymous mappings (Python's arenas, threads' stacks, large mallocs) by size."""
    found: list[tuple[int, int, str]] = []  # start, size, name; then Rss per mapping
    rss: list[int] = []
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split(None, 5)
        if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            start, end = (int(x, 16) for x in head[0].split("-"))
            found.append((start, end - start, head[5] if len(head) > 5 else ""))
            rss.append(0)
        elif head[0] == "Rss:":
            rss[-1] = int(head[1])
    anon = [i for i, (_, _, name) in enumerate(found) if not name]
    largest = max(anon, key=lambda i: found[i][1])
    parts: dict[str, float] = {}
    for i, (start, size, name) in enumerate(found):
        if name.endswith(".gguf"):
            kind = "model file"
        elif i == largest:
            kind = "llama.cpp buffers (KV, compute, output)"
        elif ".so" in name:
            kind = "shared libraries"
        elif name:
            kind = "heap, stack, other files" if name != "[heap]" else "main heap"
        elif start % (64 * MIB) == 0:
            kind = "glibc thread arenas"
        elif size > 8 * MIB + 4096:
            kind = f"anonymous, {size / MIB:.1f} MiB mapping"
        else:
            kind = "anonymous <= 8 MiB (Python arenas, stacks, mallocs)"
        parts[kind] = parts.get(kind, 0.0) + rss[i] / 1024
    return parts


def row(name: str, value: str, note: str = "") -> None:
    print(f"  {name:<58} {value:>12}  {note}")


def breakdown(model: str, n_ctx: int) -> None:
    """The parts, measured in a fresh interpreter so nothing else is counted."""
    code = f"""
from scripts.bench.bench_memory import memory
steps = [("interpreter (with this script's zmq client)", memory())]
import edge_agentd.agent, edge_agentd.model.loading as loading
steps.append(("imports (agent, numpy, llama.cpp bindings)", memory()))
from edge_agentd.model.bindings import llama_cpp as lib
from edge_agentd.model.embedded import default_model_path
path = default_model_path()[0] if {model!r} == "default" else {model!r}
lib.llama_backend_init()
params = lib.llama_model_default_params(); params.vocab_only = True
vocab = lib.llama_model_load_from_file(str(path).encode(), params)
steps.append(("llama.cpp's vocabulary tables", memory()))
lib.llama_model_free(vocab)
from edge_agentd.model.runtime import trim_heap
trim_heap()
steps.append(("(vocabulary freed)", memory()))
model = loading.load_model(None if {model!r} == "default" else {model!r}, n_ctx={n_ctx})
steps.append(("model, context (KV cache, compute buffer), vocabulary", memory()))
from edge_agentd import Agent
from edge_agentd.skills import register_builtins
from edge_agentd import Registry
registry = Registry(); register_builtins(registry)
model.warm_up(Agent(model, registry).preamble())
steps.append(("after warm-up (compute buffer touched)", memory()))
print(repr((steps, model.info["file_size_bytes"], model.kv_cache_bytes)))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=CHECKOUT
    )
    steps, file_size, kv = eval(out.stdout.strip().splitlines()[-1])
    print("\nwhere the memory goes (one process, step by step; MiB, anon + file-backed)")
    previous = None
    for name, values in steps:
        delta = "" if previous is None else f"{values['VmRSS'] - previous['VmRSS']:+.1f}"
        row(name, f"{values['VmRSS']:.1f}",
            f"{delta:>7}  anon {values['RssAnon']:.1f}, file {values['RssFile']:.1f}")
        if not name.startswith("("):
            previous = values
    row("model file, KV cache (f16, n_ctx)", f"{file_size / MIB:.0f} + {kv / MIB:.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default="default")
    parser.add_argument("--asks", type=int, default=1000)
    parser.add_argument("--n-ctx", type=int, default=4096)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache, serving(
        args.model, args.n_ctx, Path(cache)
    ) as (process, endpoint, _), Client(endpoint, timeout=300) as client:
        info = client.status()["model"]
        fixed = (info["file_size_bytes"] + (info.get("kv_cache_bytes") or 0)) / MIB
        checkpoints: list[tuple[int, dict[str, float]]] = []
        for i in range(max(30, args.asks)):
            client.run(QUERIES[i % len(QUERIES)] + f" (#{i})", AskOptions(max_iterations=2))
            if i + 1 in (30, 100, 300) or i + 1 == max(30, args.asks):
                checkpoints.append((i + 1, memory(process.pid)))
        parts = mappings(process.pid)
    print(f"edge-agent serve, model {args.model}, n_ctx {args.n_ctx}: RSS after n asks (MiB)")
    at30 = checkpoints[0][1]["VmRSS"]
    at100 = next((v for n, v in checkpoints if n >= 100), checkpoints[-1][1])["VmRSS"]
    over = at100 - fixed
    for asks, values in checkpoints:
        row(f"after {asks} asks", f"{values['VmRSS']:.1f}",
            f"anon {values['RssAnon']:.1f}, file {values['RssFile']:.1f}, "
            f"{values['VmRSS'] - at30:+.1f} since 30")
    row("model file + KV cache", f"{fixed:.1f}")
    row("RSS - (file + KV) after 100 asks (goal <= 77)", f"{over:.1f}",
        "PASS" if over <= 77 else "OVER")
    kv = (info.get("kv_cache_bytes") or 0) / MIB
    print(f"\nby mapping after {checkpoints[-1][0]} asks (/proc/PID/smaps, resident MiB)")
    for kind, mib in sorted(parts.items(), key=lambda kv: -kv[1]):
        row(kind, f"{mib:.1f}")
    own = sum(parts.values()) - parts.get("model file", 0.0) - kv
    row("RSS - (the model file's resident pages + KV)", f"{own:.1f}")
    growth = checkpoints[-1][1]["VmRSS"] - at30
    row(f"growth from 30 to {checkpoints[-1][0]} asks", f"{growth:+.1f}",
        "flat" if growth < 4 else "GROWING")
    breakdown(args.model, args.n_ctx)
    return 0 if over <= 77 and growth < 4 else 1


if __name__ == "__main__":
    sys.exit(main())
