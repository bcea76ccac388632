"""Are answers grounded for every model and every device? Issue 36's benchmark of generality.

Two real models, asked in one run, interleaved question by question, each as a real
``edge-agent serve`` daemon under ``[model] strategy = "auto"`` asked over its socket as users
ask (bench_competence's DaemonStrategy):

- ``270m``: the embedded Gemma 3 270M (``auto`` -> guided: its file is under 1 GiB);
- ``qwen``: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, a model that drives the loop itself (``auto``
  -> plain, as for Gemma 4 E2B: its file is over 1 GiB), fetched from PyPI once
  (driving_model.py);
- baselines: ``peer-270m`` and ``peer-qwen``, llama.cpp's chat completions with the action
  JSON schema in a loop a user would write (bench_competence's PeerStrategy).

Three devices (grounding_questions.py): bench_competence's fake Pi, a plugin home (seven
plugins written as docs/skills.md shows, loaded by the daemon's real plugin loader from a
``[skills] directories`` entry, written in one sitting before any run and never tuned on), and
a machine with no sensors at all. One device at a time: its daemons start, its questions are
asked of every model in turn (who goes first rotates), its daemons stop.

Scoring is bench_competence's, strict, plus states and claims (grounding_scoring.py): an answer
is *misleading* when it states a value, unit, state or claim no result holds, or answers a
question no skill answers with anything but "I cannot tell". The report gives, per model,
device and kind: strict right, misleading, "I cannot tell" on unanswerable questions, median
model calls and seconds. The verdict is issue 36's "Done when" (misleading <= 1 per device for
each model; qwen >= 80% on pi and home; 270m >= 80% on pi and >= 70% on home; on the bare
machine no misleading answer at all, so every answer is "I cannot tell" or a value its results
hold); it exits 1 on a miss. ``--json OUT`` writes the records as it goes (each with its
events: bench_pi.py ``--from-grounding`` prices qwen's tokens at E2B's Pi 5 rates).

    .venv/bin/python scripts/bench/bench_grounding.py [--models 270m,qwen,peer-270m]
        [--devices pi,home,bare] [--peer-devices home] [--only home08,cannot] [--limit N]
        [--max-iterations 6] [--json OUT]
    .venv/bin/python scripts/bench/bench_grounding.py --report RUN.json [MORE.json ...]

On a loaded 2-core machine the full run takes more than an hour; qwen is most of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import bench_competence as comp
import grounding_questions as gq
from driving_model import driving_model_path
from grounding_scoring import judge_grounded, rejudge

from edge_agentd.model.embedded import default_model_path
from edge_agentd.service.assembly.plugins import load_plugins
from edge_agentd.service.config.strategy import SMALL_MODEL_BYTES

MODELS = ("270m", "qwen", "peer-270m", "peer-qwen")
GOALS = {  # (model, device): least share strictly right
    ("qwen", "pi"): 0.8, ("qwen", "home"): 0.8, ("270m", "pi"): 0.8, ("270m", "home"): 0.7,
}  # fmt: skip
GOAL_MISLEADING = 1  # per device, per model


def _runner(name: str, device: str, built: gq.Built, workdir: Path, *,
            registry_device: comp.Device, args: argparse.Namespace) -> Any:  # fmt: skip
    env = {"HOME_STATE_DIR": str(built.state)} if built.state else {}
    dirs = (built.skills,) if built.skills else ()
    if name in ("270m", "qwen"):
        model = "default" if name == "270m" else str(args.qwen_path)
        return comp.DaemonStrategy(f"{name}-{device}", workdir, built.sysfs, built.proc, args,
                                   strategy="auto", model=model, skills_directories=dirs,
                                   env=env)  # fmt: skip
    peer = (comp.PeerStrategy(registry_device, args) if name == "peer-270m"
            else comp.PeerStrategy(registry_device, args, model_path=args.qwen_path,
                                   chat_format=None))  # fmt: skip
    peer.label = name
    return peer


def _auto_chose(name: str, args: argparse.Namespace) -> str:
    """What ``auto`` gives the model: guided under 1 GiB (the daemon's rule,
    service/config/strategy.py; its log says so only at INFO, and the benchmark's daemons log at
    WARNING)."""
    if name.startswith("peer"):
        return "peer"
    path = args.qwen_path if name == "qwen" else default_model_path()[0]
    return "guided" if Path(path).stat().st_size < SMALL_MODEL_BYTES else "plain"


def ask_device(device: str, args: argparse.Namespace, records: list[dict[str, Any]]) -> None:
    questions = select(device, args.only, args.limit)
    if not questions:
        return
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-ground-{device}-"))
    built = gq.build(device, workdir / "device")
    if built.state is not None:
        os.environ["HOME_STATE_DIR"] = str(built.state)  # the plugins, loaded in-process too
    local = comp.Device(built.sysfs, built.proc)
    if built.skills is not None:
        problems = load_plugins(local.registry, [built.skills], entry_points=False)
        if problems:
            raise RuntimeError(f"the plugin home did not load: {problems}")
    print(f"\n== {device}: {len(questions)} questions, models {', '.join(args.names)} ({workdir})")
    runners: dict[str, Any] = {}
    try:
        for name in args.names:
            if name.startswith("peer") and device not in args.peer_devices:
                continue
            runners[name] = _runner(name, device, built, workdir, registry_device=local, args=args)
            runners[name].start()
            print(f"  {name}: {_auto_chose(name, args)}")
        order = list(runners)
        for index, question in enumerate(questions):
            turn = order[index % len(order) :] + order[: index % len(order)]
            for name in turn:
                local.tick()
                check = question.expect(local, built.home)
                answer = runners[name].ask(question.text)
                right, misleads = judge_grounded(check, answer, question.text)
                record = {
                    "model": name, "strategy": _auto_chose(name, args), "device": device,
                    "id": question.id, "kind": question.kind, "question": question.text,
                    "expected": str(check), "correct": right, "misleads": misleads,
                    "cannot_tell_expected": question.kind == "cannot",
                    **dataclasses.asdict(answer),
                }  # fmt: skip
                records.append(record)
                if args.json:
                    Path(args.json).write_text(json.dumps({"partial": True, "records": records},
                                                          ensure_ascii=False))  # fmt: skip
                mark = "ok " if right else "MIS" if misleads else "BAD"
                shown = answer.answer if answer.answer is not None else f"({answer.outcome})"
                print(f"  {mark} {name:<9} {question.id} {question.text!r} -> {shown!r} "
                      f"[expected {check}; {answer.model_calls} calls "
                      f"{'/'.join(answer.skills) or '-'}; {answer.seconds:.1f} s]"
                      + (f" misleads: {'; '.join(misleads)}" if misleads else ""),
                      flush=True)  # fmt: skip
    finally:
        for runner in runners.values():
            runner.stop()
        os.environ.pop("HOME_STATE_DIR", None)
        shutil.rmtree(workdir, ignore_errors=True)


def select(device: str, only: str | None, limit: int | None) -> list[gq.Question]:
    wanted = {w.strip() for w in only.split(",") if w.strip()} if only else None
    chosen = [q for q in gq.QUESTIONS[device]
              if wanted is None or q.id in wanted or q.kind in wanted]  # fmt: skip
    return chosen[:limit]


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    cannot = [r for r in records if r["cannot_tell_expected"]]
    return {
        "n": len(records),
        "correct": sum(r["correct"] for r in records),
        "correct_rate": sum(r["correct"] for r in records) / len(records) if records else 0.0,
        "misleading": sum(bool(r["misleads"]) for r in records),
        "cannot_n": len(cannot),
        "cannot_told": sum(r["correct"] for r in cannot),
        "answered": sum(r["outcome"] == "answered" for r in records),
        "median_calls": _median([r["model_calls"] for r in records]),
        "median_s": _median([r["seconds"] for r in records]),
    }


def report(records: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    summaries: dict[tuple[str, str, str], dict[str, Any]] = {}
    models = list(dict.fromkeys(r["model"] for r in records))
    devices = [d for d in gq.DEVICES if any(r["device"] == d for r in records)]
    header = (f"  {'model':<10} {'device':<6} {'kind':<9} {'strict right':>13} {'misleading':>10} "
              f"{'cannot tell':>11} {'answered':>8} {'calls':>5} {'s/q':>6}")  # fmt: skip
    print("\n" + header + "\n  " + "-" * (len(header) - 2))
    for model in models:
        for device in devices:
            mine = [r for r in records if r["model"] == model and r["device"] == device]
            kinds = list(dict.fromkeys(r["kind"] for r in mine))
            for kind in [*kinds, "all"]:
                rows = [r for r in mine if kind in ("all", r["kind"])]
                if not rows:
                    continue
                s = summaries[(model, device, kind)] = summarize(rows)
                cannot = f"{s['cannot_told']}/{s['cannot_n']}" if s["cannot_n"] else "-"
                print(f"  {model:<10} {device:<6} {kind:<9} {s['correct']:>5}/{s['n']:<3}"
                      f"({s['correct_rate']:>4.0%}) {s['misleading']:>10} {cannot:>11} "
                      f"{s['answered']:>8} {s['median_calls']:>5.1f} "
                      f"{s['median_s']:>6.1f}")  # fmt: skip
    return summaries


def verdict(summaries: dict[tuple[str, str, str], dict[str, Any]]) -> bool:
    print("\ngoal (issue 36, Done when):")
    checks: dict[str, bool] = {}
    for (model, device, kind), s in summaries.items():
        if kind != "all" or model.startswith("peer"):
            continue
        checks[f"{model} misleading <= {GOAL_MISLEADING} on {device}"] = (
            s["misleading"] <= GOAL_MISLEADING
        )
        if device == "bare":
            checks[f"{model} on bare: every answer 'cannot tell' or held by its results"] = (
                s["misleading"] == 0
            )
        goal = GOALS.get((model, device))
        if goal is not None:
            checks[f"{model} strict right >= {goal:.0%} on {device}"] = s["correct_rate"] >= goal
    for model in ("270m", "qwen"):
        for device in gq.DEVICES:
            if (model, device, "all") not in summaries:
                checks[f"{model} asked on {device}"] = False
    for text, met in checks.items():
        print(f"  {text:<62} {'met' if met else 'NOT MET'}")
    return all(checks.values())


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--models", default="270m,qwen,peer-270m",
                        help=f"comma-separated, of {', '.join(MODELS)}")  # fmt: skip
    parser.add_argument("--devices", default=",".join(gq.DEVICES))
    parser.add_argument("--peer-devices", default=",".join(gq.DEVICES),
                        help="the devices the peers are asked on (they are slow)")  # fmt: skip
    parser.add_argument("--only", default=None, help="question ids or kinds to ask")
    parser.add_argument("--limit", type=int, default=None, help="the first N per device")
    parser.add_argument("--max-iterations", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per question")
    parser.add_argument("--load-timeout", type=float, default=600.0)
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--report", metavar="IN", nargs="+",
                        help="judge saved runs (their records joined); ask nothing")
    args = parser.parse_args(argv)
    args.names = [m.strip() for m in args.models.split(",") if m.strip()]
    args.device_names = [d.strip() for d in args.devices.split(",") if d.strip()]
    args.peer_devices = {d.strip() for d in args.peer_devices.split(",") if d.strip()}
    if set(args.names) - set(MODELS) or not args.names:
        parser.error(f"models are {', '.join(MODELS)}")
    if set(args.device_names) - set(gq.DEVICES) or not args.device_names:
        parser.error(f"devices are {', '.join(gq.DEVICES)}")
    return args


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # so that the daemons are stopped on the way out


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.report:
        # A run cut short, or devices run apart: the records of several files, judged as one.
        saved = [rejudge(r) for path in args.report
                 for r in json.loads(Path(path).read_text())["records"]]  # fmt: skip
        return 0 if verdict(report(saved)) else 1
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    args.qwen_path = driving_model_path() if any("qwen" in n for n in args.names) else None
    records: list[dict[str, Any]] = []
    for device in args.device_names:
        ask_device(device, args, records)
    summaries = report(records)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "models": args.names, "devices": args.device_names,
            "max_iterations": args.max_iterations,
            "summaries": [{"model": m, "device": d, "kind": k, **v}
                          for (m, d, k), v in summaries.items()],
            "records": records,
        }, indent=1, ensure_ascii=False))  # fmt: skip
        print(f"\nrecords written to {args.json}")
    return 0 if verdict(summaries) else 1


if __name__ == "__main__":
    sys.exit(main())
