"""The short form of the real-model soak (issue 44): scripts/bench/soak_model.py for four
questions on the embedded model, in a real ``edge-agent serve`` with its journal, a trigger and the
MQTT bridge on a real Mosquitto, with keyed, streamed, cancelled and short-deadline asks, MQTT asks,
readers and a hostile client at once.

The long form (2,000 questions, growth per 1,000 and latency bounds) is a benchmark; this checks
what holds at any length: the daemon survives and every request gets exactly one final reply.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHORT = ["--questions", "4", "--clients", "1", "--mqtt", "1", "--hostile", "1"]


@pytest.mark.timeout(1800)  # a dozen real-model runs on a loaded 2-core machine
def test_a_short_real_model_soak_answers_every_request_once(tmp_path: Path) -> None:
    plot = tmp_path / "soak.png"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.bench.soak_model",
            *SHORT,
            "--every",
            "5",
            "--plot",
            str(plot),
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        check=False,
        text=True,
        timeout=1800,
    )
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert report["problems"] == [], json.dumps(report["replies"], indent=1)
    assert report["survived"]
    # The ZeroMQ clients stop at four questions, counting the MQTT asks answered meanwhile.
    assert report["questions"] == report["zmq_questions"] + report["mqtt_questions"] >= 4
    assert sum(report["outcomes"].values()) == report["zmq_questions"] >= 1
    # Every kind of request was answered: runs, and the readers' status, runs and result.
    kinds = report["replies"]
    assert any(kind.startswith("result:") for kind in kinds), kinds
    assert plot.stat().st_size > 0
    assert result.returncode == 0
