"""A run that never returns (issue 44): outside systemd, ``status`` says ``degraded`` with the
run and how long past its deadline; the run, every queued run and every later ask are answered
``shutting_down`` (nothing is left without a reply), the journal keeps the run ``interrupted``
with the reason ``wedged`` and lets its key go; if the run returns at last, the daemon is well.

The model is the scripted one with a reply that does not come while a file exists, whatever the
deadline or cancel: a C call that never returns. tests/package/test_systemd_unit.py has the restart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import zmq
from conftest import ScriptedDaemon
from daemon_harness import ANSWER, Peer, run_request, wait_for

WEDGED_AFTER = "[daemon]\nwedged_after_s = 0.5\n"


def test_a_wedged_run_is_said_answered_journaled_and_nothing_waits_behind_it(
    scripted_daemon: ScriptedDaemon, context: zmq.Context[Any], tmp_path: Path
) -> None:
    hang = tmp_path / "hang"
    hang.touch()
    server, endpoint = scripted_daemon(
        [{"text": ANSWER, "hang_while": str(hang)}], config=WEDGED_AFTER
    )
    stuck, queued, reader = (Peer(context, endpoint) for _ in range(3))
    try:
        stuck.send(run_request(id="stuck", key="k-stuck", deadline_ms=300))
        wait_for(lambda: server.runs.running is not None, 30)
        queued.send(run_request(id="behind", key="k-behind"))
        wait_for(lambda: server.status()["state"] == "degraded", 60)
        status = server.status()
        assert status["wedged"]["run_id"] == "stuck"
        assert status["wedged"]["overdue_s"] >= 0.5
        assert status["wedged"]["restart"] == "none"  # no watchdog outside systemd
        first = stuck.until_final(30)[-1]
        assert (first["kind"], first["code"]) == ("error", "shutting_down")
        assert "ask again" in first["message"]
        behind = queued.until_final(30)[-1]
        assert (behind["kind"], behind["code"]) == ("error", "shutting_down")
        # An ask made while it is wedged is answered too, not left in the queue.
        queued.send(run_request(id="later"))
        later = queued.until_final(30)[-1]
        assert (later["id"], later["code"]) == ("later", "shutting_down")
        # The journal: interrupted, reason wedged, its key let go.
        reader.send({"v": 1, "id": "r", "op": "result", "target": "stuck"})
        record = reader.recv(30)
        assert (record["outcome"], record["reason"]) == ("interrupted", "wedged"), record
        assert server.journal.run_for_key("k-stuck") is None
        assert server.journal.run_for_key("k-behind") is None
        # The call returns at last: its result is not sent (the client was answered), and the
        # daemon is well again and answers the next ask.
        hang.unlink()
        wait_for(lambda: server.status()["state"] == "ready", 60)
        assert server.status()["wedged"] is None
        assert stuck.silent(0.5)
        queued.send(run_request(id="after"))
        after = queued.until_final(60)[-1]
        assert (after["id"], after["outcome"]) == ("after", "answered"), json.dumps(after)
    finally:
        for peer in (stuck, queued, reader):
            peer.close()
