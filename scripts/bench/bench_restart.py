"""Benchmark start to ready: a cold start (the preamble evaluated) against a warm one (its saved
KV state loaded), side by side, and what the same restart would cost Gemma 4 E2B on a Pi.

Each round starts ``edge-agent serve`` twice, as systemd would, with ``CACHE_DIRECTORY`` set and
``NOTIFY_SOCKET`` pointing at a socket of this script's: once with the state file deleted (cold),
once with it in place (warm). Start to ready is from the process's start to its ``READY=1``. The
rounds alternate, so a loaded machine slows both sides alike; the medians are compared. Budget:
warm <= 0.3x cold.

The Pi estimate scales the measured preamble token count by published Raspberry Pi 5 prefill
rates for a ~2B Q4 model, and the state file by the KV bytes per token of Gemma 4 E2B's cache.

Usage: python -m scripts.bench.bench_restart [--model default|PATH] [--rounds 3] [--n-ctx 4096]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PI_PREFILL_TOKENS_S = (30.0, 60.0)
"""Raspberry Pi 5 prefill for a ~2B-parameter Q4 GGUF with llama.cpp on four cores: the issue's
~30 tokens/s, and the upper end of published llama-bench pp512 figures for such models."""
E2B_KV_BYTES_PER_TOKEN = 15 * 2 * 256 * 2 * 2
"""Gemma 4 E2B (as Gemma 3n E2B): 15 layers that keep their own KV (the rest share it), 2 KV
heads of 256, keys and values, f16. An assumption, stated so it can be corrected."""
PI_READ_BYTES_S = (40e6, 400e6)
"""Reading the state file: a microSD card, and an NVMe drive on the Pi 5's PCIe."""


@contextlib.contextmanager
def serving(
    model: str, n_ctx: int, cache: Path, timeout: float = 600.0
) -> Iterator[tuple[subprocess.Popen[bytes], str, float]]:
    """``edge-agent serve`` started as systemd would: yields the process, its endpoint and the
    seconds from its start to READY=1; the daemon is stopped when the block ends."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    address = str(workdir / "notify")
    notify.bind(address)
    notify.settimeout(1.0)
    config = workdir / "config.toml"
    config.write_text(f'[model]\npath = "{model}"\nn_ctx = {n_ctx}\n')
    endpoint = f"ipc://{workdir}/sock"
    env = {
        **os.environ,
        "NOTIFY_SOCKET": address,
        "CACHE_DIRECTORY": str(cache),
        "XDG_RUNTIME_DIR": str(workdir),
        "XDG_STATE_HOME": str(workdir),  # its run journal, not the user's
    }
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "edge_agentd.cli", "serve", "--config", str(config),
         "--endpoint", endpoint, "--log-level", "WARNING"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            if time.perf_counter() - started > timeout:
                raise RuntimeError("the daemon did not become ready in time")
            if process.poll() is not None:
                raise RuntimeError(f"the daemon exited with {process.returncode} before ready")
            try:
                message = notify.recv(4096)
            except TimeoutError:
                continue
            if b"READY=1" in message.split(b"\n"):
                break
        yield process, endpoint, time.perf_counter() - started
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        notify.close()
        shutil.rmtree(workdir, ignore_errors=True)


def start_to_ready(model: str, n_ctx: int, cache: Path) -> float:
    """Seconds from starting ``edge-agent serve`` to its READY=1."""
    with serving(model, n_ctx, cache) as (_, _, seconds):
        return seconds


def preamble_tokens(model: str, n_ctx: int) -> tuple[int, int]:
    """The daemon's preamble in tokens (built-in skills), and the state file's size in bytes."""
    from edge_agentd import Agent, Registry
    from edge_agentd.model.loading import load_model
    from edge_agentd.skills import register_builtins

    registry = Registry()
    register_builtins(registry)
    with tempfile.TemporaryDirectory() as cache:
        handle = load_model(None if model == "default" else model, n_ctx=n_ctx, state_dir=cache)
        try:
            preamble = Agent(handle, registry).preamble()
            handle.warm_up(preamble)
            size = sum(p.stat().st_size for p in Path(cache).iterdir())
            return len(handle.tokenize(preamble)), size
        finally:
            handle.close()


def row(name: str, value: str, note: str = "") -> None:
    print(f"  {name:<58} {value:>12}  {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default="default")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-ctx", type=int, default=4096)
    args = parser.parse_args(argv)
    cache = Path(tempfile.mkdtemp(prefix="bench-restart-cache-"))
    cold: list[float] = []
    warm: list[float] = []
    try:
        start_to_ready(args.model, args.n_ctx, cache)  # the first start fills the file cache
        for _ in range(args.rounds):
            for entry in cache.iterdir():
                entry.unlink()
            cold.append(start_to_ready(args.model, args.n_ctx, cache))
            if not any(cache.iterdir()):
                raise RuntimeError("the cold start saved no prefix state")
            warm.append(start_to_ready(args.model, args.n_ctx, cache))
        tokens, state_bytes = preamble_tokens(args.model, args.n_ctx)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    cold_s, warm_s = statistics.median(cold), statistics.median(warm)
    ratio = warm_s / cold_s
    print(f"start to READY=1 of edge-agent serve, model {args.model}, n_ctx {args.n_ctx}, "
          f"median of {args.rounds} alternating rounds")
    row("cold start (preamble evaluated), s", f"{cold_s:.2f}",
        " ".join(f"{s:.2f}" for s in cold))
    row("warm start (prefix state loaded), s", f"{warm_s:.2f}",
        " ".join(f"{s:.2f}" for s in warm))
    row("warm / cold (budget <= 0.3)", f"{ratio:.2f}x", "PASS" if ratio <= 0.3 else "OVER BUDGET")
    row("preamble, tokens", f"{tokens}")
    row("state file on disk, MiB", f"{state_bytes / 2**20:.1f}")
    print("\nGemma 4 E2B on a Raspberry Pi 5 (estimate from the token count above)")
    slow, fast = (tokens / rate for rate in PI_PREFILL_TOKENS_S)
    e2b_bytes = tokens * E2B_KV_BYTES_PER_TOKEN
    read_slow, read_fast = (e2b_bytes / rate for rate in PI_READ_BYTES_S)
    row("preamble prefill at 30-60 tokens/s, s", f"{fast:.0f}-{slow:.0f}")
    row("state file, MiB", f"{e2b_bytes / 2**20:.0f}",
        f"{E2B_KV_BYTES_PER_TOKEN // 1024} KiB per token")
    row("reading it (microSD 40 MB/s - NVMe 400 MB/s), s", f"{read_fast:.2f}-{read_slow:.2f}")
    print(f"  the warm start saves {fast - read_slow:.0f}-{slow - read_fast:.0f} s of every "
          "restart; loading the model file itself is the same on both sides")
    return 0 if ratio <= 0.3 else 1


if __name__ == "__main__":
    sys.exit(main())
