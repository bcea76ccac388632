"""From a deadline or a cancel to the model free: p50/p99/max, per kind of model call.

On the embedded model, each kind of call the daemon makes is started on a thread and stopped at a
random moment of its course (uniform over its uncancelled length, measured first):

- ``prompt read``: ``generate`` on a prompt of some 600 tokens not in the cache;
- ``answer``: ``generate`` of up to 64 tokens after a cached prompt;
- ``scored batch``: ``score`` of eight sentences after a prompt not in the cache;
- ``result read``: ``likelihood`` of a question after four parts of a result, each new.

The stop is a cancel (``should_stop`` turns true) or a deadline (``deadline`` at that moment), in
turns. The figure is the time from it to the call's return, when the model is free for the next
run. Beside it, in the same run and interleaved trial by trial, the alternative: the same call with
the stop seen only where the daemon looked before (between tokens and between prompt batches of
``generate``; never inside ``score`` and ``likelihood``), i.e. without llama.cpp's abort.

``--load`` runs the whole again with a second model process generating all the while (the machine
loaded as by a second model daemon). Exit status 1 when a p99 misses its goal (0.5 s quiet, 1 s
loaded).

Usage: python -m scripts.bench.bench_cancel [--trials 20] [--load] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from edge_agentd import load_model
from edge_agentd.model.formats import GEMMA3
from edge_agentd.model.llama import Interrupted, LlamaModel

GOAL_S = {"quiet": 0.5, "loaded": 1.0}
FILLER = (
    "The sensor on the north wall of the greenhouse reads the air temperature every minute and "
    "keeps the last day of readings; the pump runs when the soil is dry. "
)
LOAD = """
import itertools
from edge_agentd import load_model
from edge_agentd.model.formats import GEMMA3
model = load_model(n_ctx=2048)
print("ready", flush=True)
for n in itertools.count():
    model.forget()
    model.generate(GEMMA3.opening("", f"Write a long story number {n}."), constrained=False)
"""

Call = Callable[[LlamaModel, int, Callable[[], bool] | None, float | None], object]


def prompt_read(model: LlamaModel, n: int, stop: Any, deadline: Any) -> object:
    model.forget()
    prompt = GEMMA3.opening("", f"Note {n}. " + FILLER * 18 + "What does the pump do?")
    return model.generate(
        prompt, constrained=False, max_tokens=1, should_stop=stop, deadline=deadline
    )


def answer(model: LlamaModel, n: int, stop: Any, deadline: Any) -> object:
    prompt = GEMMA3.opening("", "Describe the greenhouse in a long paragraph.")
    return model.generate(
        prompt, constrained=False, max_tokens=64, should_stop=stop, deadline=deadline
    )


def scored_batch(model: LlamaModel, n: int, stop: Any, deadline: Any) -> object:
    model.forget()
    prompt = GEMMA3.opening("", f"Case {n}. " + FILLER * 6 + "Which sentence fits?")
    sentences = [
        f" The pump number {i} runs when the soil is dry and the air is warm." for i in range(8)
    ]
    with model.interruptible(deadline, stop):
        return model.score(prompt, sentences, whole=True)


def result_read(model: LlamaModel, n: int, stop: Any, deadline: Any) -> object:
    model.forget()  # the kept parts of earlier trials would fill the context
    parts = [GEMMA3.opening("", f"Result part {n}.{i}: " + FILLER * 3) for i in range(4)]
    with model.interruptible(deadline, stop):
        return model.likelihood(parts, " how warm is the greenhouse right now?")


KINDS: dict[str, Call] = {
    "prompt read": prompt_read,
    "answer": answer,
    "scored batch": scored_batch,
    "result read": result_read,
}


@contextlib.contextmanager
def without_abort(model: LlamaModel) -> Iterator[None]:
    """The alternative: the model's stop watch off, so a stop is seen only where the daemon
    looked before llama.cpp's abort (between tokens and prompt batches of ``generate``)."""
    watch = model._stops.watch
    original = watch.watching
    watch.watching = lambda check: contextlib.nullcontext()  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        watch.watching = original  # type: ignore[method-assign]


def length_of(model: LlamaModel, call: Call) -> float:
    started = time.perf_counter()
    call(model, -1, None, None)
    return time.perf_counter() - started


def one_stop(model: LlamaModel, call: Call, n: int, after_s: float, by: str) -> float | None:
    """Seconds from the stop to the call's return; None when the call ended before the stop."""
    cancelled = threading.Event()
    stopped_at: list[float] = []
    deadline = time.monotonic() + after_s if by == "deadline" else None
    stop = cancelled.is_set if by == "cancel" else None
    done = threading.Event()

    def run() -> None:
        with contextlib.suppress(Interrupted):
            call(model, n, stop, deadline)
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    if by == "cancel":
        time.sleep(after_s)
        stopped_at.append(time.perf_counter())
        cancelled.set()
    done.wait()
    ended = time.perf_counter()
    thread.join()
    if by == "deadline":
        assert deadline is not None
        # The deadline's instant, on the same clock as ``ended``.
        stopped_at.append(ended - (time.monotonic() - deadline))
    return None if ended < stopped_at[0] else ended - stopped_at[0]


def measure(model: LlamaModel, trials: int, rng: random.Random) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for name, call in KINDS.items():
        length = length_of(model, call)
        arms: dict[str, list[float]] = {"abort": [], "before": []}
        early = {"abort": 0, "before": 0}
        for trial in range(trials):
            after_s = rng.uniform(0.0, 0.8 * length)
            by = "cancel" if trial % 2 == 0 else "deadline"
            for arm in ("abort", "before") if trial % 2 == 0 else ("before", "abort"):
                n = rng.randrange(10**9)
                with contextlib.nullcontext() if arm == "abort" else without_abort(model):
                    seconds = one_stop(model, call, n, after_s, by)
                if seconds is None:
                    early[arm] += 1  # the call was over before the stop: nothing to measure
                else:
                    arms[arm].append(seconds)
        figures[name] = {"call_s": round(length, 3), "ended_before_the_stop": early} | {
            arm: summary(values) for arm, values in arms.items()
        }
        print(json.dumps({name: figures[name]}), file=sys.stderr, flush=True)  # as it goes
    return figures


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values) or [float("nan")]
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "p50": round(statistics.median(ordered), 3),
        "p99": round(p99, 3),
        "max": round(ordered[-1], 3),
    }


@contextlib.contextmanager
def second_model() -> Iterator[None]:
    process = subprocess.Popen(
        [sys.executable, "-c", LOAD], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        process.stdout.readline()  # "ready": loading is not the load
        yield
    finally:
        process.kill()
        process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--load", action="store_true", help="also with a second model process")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    model = load_model(n_ctx=2048)
    assert isinstance(model, LlamaModel)
    rng = random.Random(44)
    results: dict[str, Any] = {"load_average": os.getloadavg()[0]}
    results["quiet"] = measure(model, args.trials, rng)
    if args.load:
        with second_model():
            results["loaded"] = measure(model, args.trials, rng)
    misses = [
        f"{condition} {kind}: p99 {figures['abort']['p99']} s > {GOAL_S[condition]} s"
        for condition in ("quiet", "loaded")
        for kind, figures in results.get(condition, {}).items()
        if not figures["abort"]["p99"] <= GOAL_S[condition]
    ]
    results["misses"] = misses
    if args.json:
        print(json.dumps(results))
    else:
        for condition in ("quiet", "loaded"):
            for kind, figures in results.get(condition, {}).items():
                on, off = figures["abort"], figures["before"]
                print(
                    f"{condition:6} {kind:12} call {figures['call_s']:6.2f} s  abort p50/p99/max "
                    f"{on['p50']:.3f}/{on['p99']:.3f}/{on['max']:.3f} s  "
                    f"before {off['p50']:.3f}/{off['p99']:.3f}/{off['max']:.3f} s"
                )
        print("load average at start:", results["load_average"], "; misses:", misses or "none")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
