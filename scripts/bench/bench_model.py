"""Benchmark the resident model: speed, grammar cost, prefix reuse, first action, memory.

Every figure is measured side by side with its alternative in the same process and printed as a
ratio against its budget:

- prefill and decode tokens/s;
- constrained decoding (check-first grammar) against unconstrained decoding, per generated token
  (budget <= 1.2x), with llama-cpp-python's full-vocabulary grammar pass shown for reference;
- the guided strategy's copy-only answers against free text of as many tokens (<= 1.2x);
- prompt tokens evaluated over a 12-step agent run with prefix reuse, against the tokens that were
  new to the model (budget <= 1.1x) and against a fresh context per step;
- time to the first action of a query after warm-up, against a cold cache;
- resident memory against the model file plus the KV cache (budget: + 100 MB).

Usage: python -m scripts.bench.bench_model [--model PATH] [--n-ctx 4096] [--threads N]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from edge_agentd import Agent, AgentState, CallSkillAction, FinalAnswerAction, Registry, Usage
from edge_agentd.agent.evidence import answer_pattern, answer_schema, copyable
from edge_agentd.guidance.guidance import ANSWER_HEAD
from edge_agentd.model.llama import LlamaModel
from edge_agentd.model.loading import load_model
from scripts.bench.decoders import decoding, measure

QUERIES = [
    "What is the temperature of the living room sensor?",
    "What time is it?",
    "Is the kitchen warmer than the bedroom?",
    "How much free disk space is left?",
    "What is today's date?",
    "Tell me the humidity in the bathroom.",
]


def bench_registry() -> Registry:
    registry = Registry()

    @registry.skill
    def read_sensor(name: str) -> float:
        """Read a temperature sensor, in degrees Celsius."""
        return 21.5

    @registry.skill
    def read_humidity(room: str) -> float:
        """Relative humidity of a room, in percent."""
        return 48.0

    @registry.skill
    def clock() -> str:
        """The current local time, HH:MM."""
        return "12:00"

    @registry.skill
    def today() -> str:
        """Today's date, YYYY-MM-DD."""
        return "2026-12-02"

    @registry.skill
    def disk_free(mount: str = "/") -> int:
        """Free bytes on a mounted filesystem."""
        return 12_000_000_000

    return registry


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def row(name: str, value: str, note: str = "") -> None:
    print(f"  {name:<58} {value:>16}  {note}")


def usage_of(reply: Any) -> Usage:
    usage = getattr(reply, "usage", None)
    if not isinstance(usage, Usage):
        raise RuntimeError("the model did not report usage")
    return usage


def bench_speed(model: LlamaModel, agent: Agent) -> None:
    print("\nprefill and decode")
    prompt = agent.render_prompt(AgentState(query=QUERIES[0]))
    prefill, decode = [], []
    for _ in range(3):
        model.forget()
        usage = usage_of(model.generate(prompt, constrained=False, max_tokens=48))
        prefill.append((usage.evaluated_tokens or 0) / (usage.prefill_s or 1e-9))
        decode.append((usage.generated_tokens or 0) / (usage.decode_s or 1e-9))
    row("prefill, tokens/s (prompt from a cold cache)", f"{statistics.median(prefill):.1f}",
        f"{usage.evaluated_tokens} tokens")
    row("decode, tokens/s (unconstrained, greedy)", f"{statistics.median(decode):.1f}",
        f"{usage.generated_tokens} tokens")


def decode_steps(usage: Usage) -> int:
    """Tokens run through the model while decoding: a token cut off at the cap is never run."""
    generated = usage.generated_tokens or 0
    return generated - 1 if usage.stop == "length" else generated


def bench_grammar(model: LlamaModel, agent: Agent) -> float:
    print("\nconstrained decoding, cost per generated token (same prompts, same token counts)")
    schema = agent.registry.action_schema()
    names = ("check-first grammar", "unconstrained", "full-vocabulary grammar pass")
    seconds = dict.fromkeys(names, 0.0)
    steps = dict.fromkeys(names, 0)
    for round_ in range(3):
        for query in QUERIES:
            prompt = agent.render_prompt(AgentState(query=query))
            model.generate(prompt, max_tokens=1, constrained=False)  # cache the prompt for all
            con = usage_of(model.generate(prompt, action_schema=schema))
            # The same number of decode steps without the grammar, and with llama-cpp-python's
            # way of applying it (the whole vocabulary judged at every token).
            cap = (con.generated_tokens or 0) + 1
            unc = usage_of(model.generate(prompt, constrained=False, max_tokens=cap))
            with decoding(model, full_pass=True):
                full = usage_of(model.generate(prompt, action_schema=schema, max_tokens=cap))
            if round_ == 0:
                continue  # the first round warms caches and grammars
            for name, usage in zip(names, (con, unc, full), strict=True):
                seconds[name] += usage.decode_s or 0.0
                steps[name] += decode_steps(usage)
    per_token = {name: seconds[name] / max(1, steps[name]) for name in names}
    for name in names:
        row(f"{name}, ms per token", f"{per_token[name] * 1000:.2f}", f"{steps[name]} tokens")
    ratio = per_token[names[0]] / per_token[names[1]]
    full_ratio = per_token[names[2]] / per_token[names[1]]
    row("constrained / unconstrained (budget <= 1.2)", f"{ratio:.2f}x",
        "PASS" if ratio <= 1.2 else "OVER BUDGET")
    row("full-vocabulary pass / unconstrained (llama-cpp-python)", f"{full_ratio:.2f}x",
        "for reference")
    return ratio


ANSWER_CASES = [
    ({"sensor": "bme280", "readings": [
        {"quantity": "temperature", "value": 22.7, "unit": "°C",
         "also": {"value": 72.86, "unit": "°F"}},
        {"quantity": "humidity", "value": 41.5, "unit": "%RH"}]}, "How humid is the bathroom?"),
    ({"load_average": {"1min": 0.42, "5min": 0.37, "15min": 0.31},
      "memory": {"total_mib": 3793.3, "available_mib": 2367.0, "used_percent": 37.6},
      "disk": {"path": "/", "total_gib": 251.97, "free_gib": 78.47, "used_percent": 22.7},
      "uptime": {"seconds": 458000, "hours": 127.2, "days": 5.3, "text": "5 d 7 h 13 min"}},
     "How much free disk space is left?"),
    ({"date": "2026-12-04", "weekday": "Friday", "days_from_today": 1},
     "What is the date tomorrow?"),
]  # fmt: skip
"""Results and questions a copy-only answer is decoded for: a new pattern for every answer."""


def bench_answer_grammar(model: LlamaModel, agent: Agent) -> float:
    """A copy-only final answer (the guided strategy's) against free text of as many tokens:
    decode cost per token, and the wall time of the whole answer, grammar build included."""
    print("\ncopy-only answers, cost per generated token (same prompts, same token counts)")
    names = ("copy-only answer", "unconstrained")
    zero = dict.fromkeys(names, 0.0)
    seconds, walls, steps = dict(zero), dict(zero), dict.fromkeys(names, 0)
    for round_ in range(3):
        for result, query in ANSWER_CASES:
            evidence = copyable([result], query)
            schema = answer_schema(answer_pattern(evidence))
            prompt = agent.render_prompt(AgentState(query=query)) + ANSWER_HEAD
            model.generate(prompt, max_tokens=1, constrained=False)  # cache the prompt for all
            started = time.perf_counter()
            con = usage_of(model.generate(prompt, action_schema=schema, prefix=ANSWER_HEAD,
                                          max_tokens=ACTION_CAP))
            con_wall = time.perf_counter() - started
            cap = (con.generated_tokens or 0) + 1
            started = time.perf_counter()
            unc = usage_of(model.generate(prompt, constrained=False, max_tokens=cap))
            unc_wall = time.perf_counter() - started
            if round_ == 0:
                continue
            for name, usage, wall in zip(names, (con, unc), (con_wall, unc_wall), strict=True):
                seconds[name] += usage.decode_s or 0.0
                steps[name] += decode_steps(usage)
                walls[name] += wall
    per_token = {name: seconds[name] / max(1, steps[name]) for name in names}
    for name in names:
        row(f"{name}, ms per token", f"{per_token[name] * 1000:.2f}", f"{steps[name]} tokens")
        built = "grammar built" if name == names[0] else ""
        row(f"{name}, ms per answer (wall)", f"{walls[name] * 1000 / 6:.1f}", built)
    ratio = per_token[names[0]] / per_token[names[1]]
    row("copy-only / unconstrained (budget <= 1.2)", f"{ratio:.2f}x",
        "PASS" if ratio <= 1.2 else "OVER BUDGET")
    return ratio


ACTION_CAP = 48
"""Tokens an action may take in the per-action comparison: a 270M model sometimes runs on."""


def reply_steps(model: LlamaModel, usage: Usage) -> int:
    """Tokens the last reply sampled one model call at a time (forced runs are batched)."""
    stats = measure(model).last
    sampled = getattr(stats, "sampled", None)
    return int(sampled) if sampled is not None else decode_steps(usage)


def bench_actions(model: LlamaModel, agent: Agent) -> dict[str, float]:
    """Per action, medians over the queries: model calls (sampled steps) and seconds of a
    constrained action with forced runs batched, of the same grammar sampled a token at a time
    (the path before forced runs), and of unconstrained free text of the same number of tokens.
    Each starts after the same cached prompt; the three are interleaved per query."""
    print("\nper action (median over queries): forced runs vs token by token vs free text")
    schema = agent.registry.action_schema()
    sides = ("forced runs batched", "token by token", "unconstrained, same length")
    steps: dict[str, list[float]] = {side: [] for side in sides}
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    tokens: dict[str, list[float]] = {side: [] for side in sides}
    for round_ in range(2):
        for query in QUERIES:
            prompt = agent.render_prompt(AgentState(query=query))
            measured = []
            length = ACTION_CAP
            for side in sides:
                model.generate(prompt, max_tokens=1, constrained=False)  # the prompt is cached
                options: dict[str, Any] = (
                    {"constrained": False, "max_tokens": length}
                    if side == sides[2]
                    else {"action_schema": schema, "max_tokens": ACTION_CAP}
                )
                with decoding(model, forced_runs=side != sides[1]) as decoder:
                    started = time.perf_counter()
                    usage = usage_of(model.generate(prompt, **options))
                    elapsed = time.perf_counter() - started
                stats = decoder.last
                reply_tokens = (usage.generated_tokens or 0) + (stats.lead if stats else 0)
                if side == sides[0]:
                    length = max(1, reply_tokens)
                measured.append((side, reply_steps(model, usage), elapsed, reply_tokens))
            if round_ == 0:
                continue  # the first round warms caches and grammars
            for side, n, s, t in measured:
                steps[side].append(n)
                seconds[side].append(s)
                tokens[side].append(t)
    result: dict[str, float] = {}
    for side in sides:
        result[f"{side} steps"] = statistics.median(steps[side])
        result[f"{side} s"] = statistics.median(seconds[side])
        row(f"{side}: sampled steps", f"{result[f'{side} steps']:.1f}",
            f"{statistics.median(tokens[side]):.0f} reply tokens")
        row(f"{side}: ms", f"{result[f'{side} s'] * 1000:.1f}")
    step_ratio = result[f"{sides[0]} steps"] / max(1e-9, result[f"{sides[1]} steps"])
    time_ratio = result[f"{sides[0]} s"] / max(1e-9, result[f"{sides[1]} s"])
    free_ratio = result[f"{sides[0]} s"] / max(1e-9, result[f"{sides[2]} s"])
    row("forced / token by token, steps (budget <= 0.5)", f"{step_ratio:.2f}x",
        "PASS" if step_ratio <= 0.5 else "OVER BUDGET")
    row("forced / token by token, seconds (budget <= 0.6)", f"{time_ratio:.2f}x",
        "PASS" if time_ratio <= 0.6 else "OVER BUDGET")
    row("forced / free text of the same length, seconds (< 1)", f"{free_ratio:.2f}x",
        "PASS" if free_ratio < 1 else "OVER BUDGET")
    result["steps ratio"], result["time ratio"], result["free ratio"] = (
        step_ratio, time_ratio, free_ratio)
    return result


def bench_reuse(model: LlamaModel, agent: Agent) -> float:
    print("\nprefix reuse over one 12-step run")
    model.forget()
    # New: the first prompt, then what each prompt adds after the previous reply. The reply
    # itself is not new: the model wrote it, and its tokens stay in the cache (issue 23).
    state = agent.run(QUERIES[0], max_iterations=12, max_retries=12)
    steps = [e for e in state.stream if isinstance(e, CallSkillAction | FinalAnswerAction)]
    usages = [e.usage for e in steps if e.usage is not None]
    evaluated = sum(u.evaluated_tokens or 0 for u in usages)
    new = usages[0].prompt_tokens or 0
    for before, after in itertools.pairwise(usages):
        new += (after.prompt_tokens or 0) - (before.prompt_tokens or 0) - (
            before.generated_tokens or 0
        )
    # The same prompts again, each in a fresh context.
    replay = AgentState(query=state.query)
    fresh_evaluated = 0
    fresh_s = 0.0
    schema = agent.registry.action_schema()
    for event in state.stream:
        if isinstance(event, CallSkillAction | FinalAnswerAction):
            model.forget()
            usage = usage_of(model.generate(agent.render_prompt(replay), action_schema=schema))
            fresh_evaluated += usage.evaluated_tokens or 0
            fresh_s += usage.prefill_s or 0.0
        replay.stream.append(event)
    reuse_s = sum(u.prefill_s or 0.0 for u in usages)
    row("steps in the run", f"{len(usages)}", f"outcome {state.outcome}")
    row("prompt tokens in all steps", f"{sum(u.prompt_tokens or 0 for u in usages)}")
    row("tokens new to the model", f"{new}")
    row("evaluated with reuse", f"{evaluated}")
    row("evaluated with a fresh context per step", f"{fresh_evaluated}")
    ratio = evaluated / max(1, new)
    row("reuse: evaluated / new (budget <= 1.1)", f"{ratio:.3f}x",
        "PASS" if ratio <= 1.1 else "OVER BUDGET")
    row("fresh context / reuse, tokens evaluated", f"{fresh_evaluated / max(1, evaluated):.1f}x")
    row("fresh context / reuse, prefill seconds", f"{fresh_s / max(reuse_s, 1e-9):.1f}x",
        f"{fresh_s:.2f} s vs {reuse_s:.2f} s")
    return ratio


def bench_first_action(model: LlamaModel, agent: Agent) -> None:
    print("\ntime to the first action of a query")
    cold, warm = [], []
    for query in QUERIES[:3]:
        model.forget()
        started = time.perf_counter()
        agent.step(AgentState(query=query))
        cold.append(time.perf_counter() - started)
        model.forget()
        model.warm_up(agent.preamble())
        started = time.perf_counter()
        agent.step(AgentState(query=query))
        warm.append(time.perf_counter() - started)
    row("cold cache, s", f"{statistics.median(cold):.3f}")
    row("after warm-up with agent.preamble(), s", f"{statistics.median(warm):.3f}")
    row("cold / warm", f"{statistics.median(cold) / statistics.median(warm):.1f}x")


def bench_memory(model: LlamaModel, agent: Agent, baseline: int) -> float:
    """Resident memory over the model file and KV cache, in MiB."""
    print("\nresident memory, after warm-up and one agent run per query (as a daemon would)")
    model.warm_up(agent.preamble())
    for query in QUERIES:
        agent.run(query, max_iterations=4)
    file_size = model.info["file_size_bytes"]
    kv = model.kv_cache_bytes or 0
    rss = rss_bytes()
    mib = 1024 * 1024
    row("process RSS before loading, MiB", f"{baseline / mib:.0f}")
    row("process RSS now, MiB", f"{rss / mib:.0f}")
    row("model file + KV cache (f16, n_ctx), MiB", f"{(file_size + kv) / mib:.0f}",
        f"file {file_size / mib:.0f} + KV {kv / mib:.0f}")
    over = (rss - file_size - kv) / mib
    row("RSS - (file + KV), MiB (budget <= 100)", f"{over:.0f}",
        "PASS" if over <= 100 else "OVER BUDGET")
    row("  of which the interpreter and libraries before loading, MiB", f"{baseline / mib:.0f}")
    settled = rss_bytes()
    for i in range(100):
        # Distinct queries of distinct lengths, so nothing is sized only once.
        agent.step(AgentState(query=f"{QUERIES[i % len(QUERIES)]} ({'please ' * (i % 7)}#{i})"))
    row("RSS change over 100 more requests, MiB", f"{(rss_bytes() - settled) / mib:+.1f}",
        "flat" if rss_bytes() - settled < 4 * mib else "GROWING")
    return over


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default=None, help="a GGUF path (default: the embedded model)")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    baseline = rss_bytes()
    started = time.perf_counter()
    model = load_model(args.model, n_ctx=args.n_ctx, n_threads=args.threads)
    measure(model)  # the daemon's decoder, counting what each reply sampled and forced
    agent = Agent(model, bench_registry())
    print(f"model {model.info['name']} ({model.info['architecture']}), n_ctx {model.n_ctx}, "
          f"{model.n_threads} threads, loaded in {time.perf_counter() - started:.2f} s")
    try:
        memory_over = bench_memory(model, agent, baseline)
        actions = bench_actions(model, agent)
        bench_speed(model, agent)
        grammar = bench_grammar(model, agent)
        answers = bench_answer_grammar(model, agent)
        reuse = bench_reuse(model, agent)
        bench_first_action(model, agent)
    finally:
        model.close()
    verdicts = {
        "constrained decoding <= 1.2x": grammar <= 1.2,
        "copy-only answers <= 1.2x": answers <= 1.2,
        "prefix reuse <= 1.1x": reuse <= 1.1,
        "action steps <= 0.5x token by token": actions["steps ratio"] <= 0.5,
        "action seconds <= 0.6x token by token": actions["time ratio"] <= 0.6,
        "action < free text of its length": actions["free ratio"] < 1,
        "memory <= file + KV + 100 MiB": memory_over <= 100,
    }
    print("\nbudgets:")
    for budget, met in verdicts.items():
        print(f"  {budget:<34} {'met' if met else 'NOT MET'}")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
