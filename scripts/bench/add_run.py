"""The scripted run the daemon-cost benchmarks serve (bench_ipc, bench_journal): one call of an
``add`` skill loaded from a plugin file, then the answer, so the model costs nothing and what is
timed is the daemon's own work per run."""

from __future__ import annotations

import json
from pathlib import Path

SCRIPT = [
    '{"skill_name": "add", "arguments": {"a": 2, "b": 3}}',
    '{"final_answer": "2 + 3 = 5"}',
]
QUERY = "What is 2 + 3?"
ANSWER = "2 + 3 = 5"
PLUGIN = (
    "def register(registry):\n"
    "    @registry.skill(timeout=None)\n"
    "    def add(a: int, b: int) -> int:\n"
    '        """Add two integers."""\n'
    "        return a + b\n"
)


def write_add_run(workdir: Path) -> tuple[Path, str]:
    """The mock's script and the plugin, written into ``workdir`` unless already there: the mock's
    path, and the config's ``[skills]`` section that loads that plugin and nothing else."""
    mock = workdir / "mock.json"
    plugins = workdir / "plugins"
    if not plugins.exists():
        mock.write_text(json.dumps(SCRIPT))
        plugins.mkdir()
        (plugins / "bench_add.py").write_text(PLUGIN)
    skills = (
        "[skills]\nbuiltins = false\nentry_points = false\n"
        f"directories = [{json.dumps(str(plugins))}]\n"
    )
    return mock, skills
