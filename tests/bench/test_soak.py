"""The short soak (issues 11, 20): scripts/bench/soak.py's mixed traffic for 25 seconds.

The full soak is a benchmark (``python -m scripts.bench.soak --mqtt 2``); this one checks the same
things with the same slack, with 24 ZeroMQ clients against a cap of 16 and 2 MQTT clients: the
daemon survives, answers every normal request exactly once, and its fds and threads come back to
where they were, its RSS within 20 MiB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHORT = ["--only", "soak", "--seconds", "25", "--rss-slack-mib", "20", "--mqtt", "2", "--json"]


def test_a_short_soak_leaves_the_daemon_flat_and_every_request_answered_once() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scripts.bench.soak", *SHORT],
        cwd=REPO,
        capture_output=True,
        check=False,
        text=True,
        timeout=900,
    )
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    soak = report["soak"]
    assert report["problems"] == [], json.dumps(soak, indent=1)
    assert result.returncode == 0
    assert soak["survived"]
    assert soak["normal_requests"] > 0
    assert soak["normal_answered_once"] == soak["normal_requests"]
    # Over MQTT through a real Mosquitto too, bad asks included.
    assert soak["mqtt_requests"] > 0
    assert soak["mqtt_answered_once"] == soak["mqtt_requests"]
    assert soak["mqtt_replies"].get("error:bad_request", 0) > 0
    # More clients than the cap (24 against 16): the late ones were told busy, not dropped.
    assert soak["counters"]["connections_over_cap"] > 0
    assert soak["after"]["fds"] == soak["before"]["fds"]
    assert soak["after"]["threads"] == soak["before"]["threads"]
    assert soak["rss_growth_mib"] <= 20
    # The hostile side really ran: every kind of misbehaviour, and the daemon saw it.
    assert set(soak["hostile_acts"]) == {
        "idle_flood",
        "garbage",
        "bad_frames",
        "own_routing_id",
        "abandoned_run",
        "foreign_cancel",
    }
    assert soak["counters"]["connections_closed"] > 0
    assert soak["counters"]["errors_by_code"]["bad_request"] > 0
