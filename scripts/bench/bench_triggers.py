"""Benchmark the triggers: the idle daemon's CPU with 20 ``when`` triggers against none, side by
side, and the time from a crossing to the firing's queued run.

Idle CPU: two ``edge-agent serve --model mock:FILE`` daemons run at once over one fake sysfs tree
of 20 1-Wire probes, one with 20 ``when`` triggers (one per probe, never crossing) and one with
none, so a loaded machine slows both alike. Their CPU time is read from /proc over the same
windows. The triggers are checked every ``--check-every`` s (default 1 s, 30 times the 30 s of the
budget, so the cost stands out of the noise) and the extra CPU is scaled to 30 s checks. Budget:
under 0.5 % of one core more than none.

Bad checks, in the same run and over the same windows: a third daemon with one trigger whose
skill hangs (its 1 s timeout passes, the call never returns), and a fourth with one whose skill
raises SystemExit at every check, both checked every 1 s (not scaled: 30 times the budget's
rate). Budget: each under 0.5 % of one core more than none (a hung check used to pin a core).

Crossing to queued run: a daemon in this process, one trigger checked every 1 s; a probe is warmed
past its threshold, and the run's arrival in the queue is timed from the write to the sysfs file
(which includes waiting for the next check: up to ``check_every``) and from the check's reading
(the daemon's own part). Budget: the daemon's own part at most 50 ms at the median.

Usage: python -m scripts.bench.bench_triggers [--seconds 60] [--check-every 1] [--crossings 10]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edge_agentd.skills.demo import SysfsTree
from scripts.testbed.processes import cpu_seconds

PROBES = 20
BUDGET_PERCENT = 0.5
BUDGET_OWN_MS = 50.0
BUDGET_CHECK_S = 30.0


def probe_name(n: int) -> str:
    return f"28-{n:012x}"


def build_sysfs(root: Path) -> None:
    """20 DS18B20 probes at -18 °C, written by the demo device's own writer."""
    tree = SysfsTree(root)
    for n in range(PROBES):
        tree.w1_probe(probe_name(n), temperature="-18000")


def trigger_config(count: int, check_every: str, cooldown: str = "10m") -> str:
    tables = []
    for n in range(count):
        tables.append(
            f'[[triggers]]\nname = "probe{n}"\n'
            f'when = {{ skill = "read_sensor", arguments = {{ name = "{probe_name(n)}" }}, '
            f'above = -10.0, hysteresis = 1.0, check_every = "{check_every}" }}\n'
            f'query = "How warm is probe {n}?"\ncooldown = "{cooldown}"\n'
        )
    return "\n".join(tables)


BAD_SKILLS = (
    "import threading\n"
    "\n"
    "\n"
    "def register(registry):\n"
    "    never = threading.Event()\n"
    "\n"
    "    @registry.skill(timeout=1.0)\n"
    "    def stuck_gauge() -> dict:\n"
    '        """A gauge whose bus hangs for good."""\n'
    "        never.wait()\n"
    '        return {"value": 1.0}\n'
    "\n"
    "    @registry.skill(timeout=1.0)\n"
    "    def exiting_gauge() -> dict:\n"
    '        """A gauge whose driver calls sys.exit."""\n'
    "        raise SystemExit(3)\n"
)


def bad_check_config(workdir: Path, skill: str) -> str:
    """One trigger checked every 1 s on ``skill`` of the bad skills' plugin."""
    plugins = workdir / "bad-plugins"
    if not plugins.exists():
        plugins.mkdir(mode=0o755)
        (plugins / "bad_gauges.py").write_text(BAD_SKILLS)
    return (
        f"[skills]\ndirectories = [{json.dumps(str(plugins))}]\n\n"
        f'[[triggers]]\nname = "bad"\nwhen = {{ skill = "{skill}", above = 0.0, '
        f'check_every = "1s" }}\nquery = "Is the gauge high?"\n'
    )


@contextlib.contextmanager
def daemon(workdir: Path, name: str, config: str, sysfs: Path) -> Iterator[subprocess.Popen[bytes]]:
    mock = workdir / "mock.json"
    mock.write_text(json.dumps(['{"final_answer": "ok"}']))
    path = workdir / f"{name}.toml"
    path.write_text(config)
    endpoint = f"ipc://{workdir}/{name}.sock"
    env = {
        **os.environ,
        "EDGE_AGENT_SYSFS_ROOT": str(sysfs),
        "XDG_RUNTIME_DIR": str(workdir),
        "XDG_STATE_HOME": str(workdir),  # the run journal goes to the scratch directory
    }
    command = [
        sys.executable,
        "-m",
        "edge_agentd.cli",
        "serve",
        "--model",
        f"mock:{mock}",
        "--config",
        str(path),
        "--endpoint",
        endpoint,
        "--log-level",
        "WARNING",
    ]
    process = subprocess.Popen(command, env=env)
    try:
        from edge_agentd.client.zmqclient import Client, DaemonError

        until = time.monotonic() + 60
        while True:
            try:
                with Client(endpoint, timeout=1.0, retries=0) as client:
                    if client.status()["state"] == "ready":
                        break
            except DaemonError:
                pass
            if time.monotonic() > until or process.poll() is not None:
                raise RuntimeError(f"the {name} daemon did not get ready")
            time.sleep(0.2)
        yield process
    finally:
        process.terminate()
        process.wait(30)


def idle_cpu(seconds: float, check_every: float) -> dict[str, float]:
    """The CPU (% of one core) of each daemon, all idle at once over the same window: ``with``
    20 triggers, ``without`` none, ``hung`` one whose check hangs, ``exits`` one whose check
    raises SystemExit."""
    with tempfile.TemporaryDirectory(prefix="bench-triggers-") as tmp:
        workdir = Path(tmp)
        sysfs = workdir / "sys"
        build_sysfs(sysfs)
        configs = {
            "with": trigger_config(PROBES, f"{check_every:g}s"),
            "without": "",
            "hung": bad_check_config(workdir, "stuck_gauge"),
            "exits": bad_check_config(workdir, "exiting_gauge"),
        }
        with contextlib.ExitStack() as stack:
            pids = {
                name: stack.enter_context(daemon(workdir, name, config, sysfs)).pid
                for name, config in configs.items()
            }
            time.sleep(3.0)  # past the start-up, and past the hung check's 1 s timeout
            start = {name: cpu_seconds(pid) for name, pid in pids.items()}
            begun = time.monotonic()
            time.sleep(seconds)
            end = {name: cpu_seconds(pid) for name, pid in pids.items()}
            wall = time.monotonic() - begun
    return {name: 100 * (end[name] - start[name]) / wall for name in pids}


def crossing_times(crossings: int) -> tuple[list[float], list[float]]:
    """Seconds from each crossing's sysfs write, and from its check's reading, to the queued run."""
    from edge_agentd.agent.registry import Registry
    from edge_agentd.model.scripted import MockModel
    from edge_agentd.service.config.settings import parse_settings
    from edge_agentd.service.options import ServerOptions
    from edge_agentd.service.server import Server
    from edge_agentd.service.systemd import Notifier
    from edge_agentd.service.triggers.firing import Firing
    from edge_agentd.skills import register_builtins

    with tempfile.TemporaryDirectory(prefix="bench-triggers-") as tmp:
        sysfs = Path(tmp) / "sys"
        build_sysfs(sysfs)
        registry = Registry()
        register_builtins(registry, sysfs_root=sysfs)
        model = MockModel(['{"final_answer": "ok"}'])
        journal = f'[journal]\npath = "{tmp}/journal.sqlite3"\n'
        settings = parse_settings(journal + trigger_config(1, "1s", cooldown="0s"))
        server = Server(
            settings,
            ServerOptions(
                endpoints=[f"ipc://{tmp}/sock"],
                load_model=lambda: model,
                model_spec="mock:bench",
                registry=registry,
                notifier=Notifier({}),
            ),
        )
        queued: list[tuple[float, Firing]] = []
        queue = server.triggers.queue

        def timed(firing: Firing, *, stopping: bool) -> None:
            queue(firing, stopping=stopping)
            queued.append((time.time(), firing))

        server.triggers.queue = timed  # type: ignore[method-assign]
        server.bind()
        thread = threading.Thread(target=server.serve, daemon=True)
        thread.start()
        record = server.triggers.runner.records["probe0"]
        probe = sysfs / "devices" / "w1_bus_master1" / probe_name(0) / "temperature"
        from_write, from_reading = [], []
        try:
            for _ in range(crossings):
                wait(lambda: record.reading is not None and record.reading.value < -11)
                wait(lambda: record.pending is None)
                written = time.time()
                probe.write_text("-5000\n")
                wait(lambda: len(queued) > len(from_write))
                at, firing = queued[-1]
                from_write.append(at - written)
                from_reading.append(at - firing.fired_at)
                probe.write_text("-18000\n")
        finally:
            server.stop()
            thread.join(30)
    return from_write, from_reading


def wait(condition: Any, timeout: float = 30.0) -> None:
    until = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > until:
            raise TimeoutError("the benchmark's condition was not met")
        time.sleep(0.001)


def ratio_text(cpu: float, none: float) -> str:
    if none > 0:
        return f"{cpu / none:.2f}x"
    return "n/a (none used no CPU the clock ticks could see)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--check-every", type=float, default=1.0)
    parser.add_argument("--crossings", type=int, default=10)
    args = parser.parse_args(argv)
    cpu = idle_cpu(args.seconds, args.check_every)
    with_, without = cpu["with"], cpu["without"]
    scale = args.check_every / BUDGET_CHECK_S
    extra = (with_ - without) * scale
    print(
        f"idle CPU over {args.seconds:g} s, {PROBES} when-triggers checked every "
        f"{args.check_every:g} s: {with_:.3f} % of a core, none: {without:.3f} %"
    )
    print(
        f"  extra, scaled to checks every {BUDGET_CHECK_S:g} s: {extra:.4f} % of a core "
        f"(budget < {BUDGET_PERCENT} %); ratio with/none at {args.check_every:g} s: "
        f"{ratio_text(with_, without)}"
    )
    bad_ok = True
    for name, what in (("hung", "whose check hangs"), ("exits", "whose check raises SystemExit")):
        extra_bad = cpu[name] - without
        bad_ok = bad_ok and extra_bad < BUDGET_PERCENT
        print(
            f"idle CPU, one trigger {what}, checked every 1 s: {cpu[name]:.3f} % of a core, "
            f"{extra_bad:+.3f} % over none (budget < +{BUDGET_PERCENT} %, not scaled); "
            f"ratio {ratio_text(cpu[name], without)}"
        )
    from_write, from_reading = crossing_times(args.crossings)
    own_ms = 1000 * statistics.median(from_reading)
    print(
        f"crossing to queued run, {args.crossings} crossings, checks every 1 s: median "
        f"{statistics.median(from_write):.3f} s, max {max(from_write):.3f} s (the wait for "
        f"the next check included)"
    )
    print(
        f"  the daemon's own part (check's reading to queued run): median {own_ms:.2f} ms, "
        f"max {1000 * max(from_reading):.2f} ms (budget median <= {BUDGET_OWN_MS:g} ms)"
    )
    ok = extra < BUDGET_PERCENT and own_ms <= BUDGET_OWN_MS and bad_ok
    print("verdict:", "within budget" if ok else "OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
