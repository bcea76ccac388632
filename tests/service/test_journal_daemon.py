"""The journal through a real daemon: ``run``'s key, ``result`` and ``runs`` on the wire, every
run's end kept, hostile input to the new fields, and a bad journal file that never stops a run."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from daemon_harness import Peer, run_request, wait_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from journal_harness import COUNTED, HANG, HANGED, SCRIPT, ask, daemon, result

from edge_agentd.protocol.wire import RunRecord, RunResult, RunsResult, StatusResult
from edge_agentd.service.server import Server


def test_a_second_run_with_the_same_key_gets_the_first_runs_result(tmp_path: Path) -> None:
    with daemon(tmp_path, SCRIPT) as (server, _, skills, peer):
        first = ask(peer, run_request(id="first", key="kitchen-07:00"))
        second = ask(peer, run_request(id="second", key="kitchen-07:00"))
        RunResult.model_validate(second)
        assert (first["id"], first["run_id"]) == ("first", "first")
        assert (second["id"], second["run_id"]) == ("second", "first")
        assert second["answer"] == first["answer"] == COUNTED
        assert second["state"] == first["state"]
        assert skills.calls == 1  # the model ran once
        other = ask(peer, run_request(id="third", key="kitchen-08:00"))
        assert other["run_id"] == "third"
        assert skills.calls == 2
        assert server.status()["journal"]["counters"]["deduplicated"] == 1


def test_a_keyed_run_still_going_answers_both_requests_when_it_ends(
    tmp_path: Path, context: zmq.Context[Any]
) -> None:
    with daemon(tmp_path, HANG) as (_, endpoint, skills, peer):
        peer.send(run_request(id="first", key="k"))
        assert skills.entered.wait(10)
        again = Peer(context, endpoint)
        try:
            again.send(run_request(id="again", key="k"))
            assert again.silent(0.3)
            record = result(again, "first")
            RunRecord.model_validate(record)
            assert (record["state"], record["outcome"], record["started_at"] is not None) == (
                "running",
                None,
                True,
            )
            skills.release.set()
            mine = peer.recv(10)
            theirs = again.recv(10)
        finally:
            again.close()
        assert (mine["id"], theirs["id"]) == ("first", "again")
        assert theirs["run_id"] == "first"
        assert theirs["answer"] == mine["answer"] == HANGED
        assert skills.calls == 1
        record = result(peer, "first")
        assert (record["state"], record["outcome"], record["key"]) == ("done", "answered", "k")


def test_result_and_runs_read_the_journal(tmp_path: Path) -> None:
    with daemon(tmp_path, SCRIPT) as (server, _, _, peer):
        for number in range(5):
            ask(peer, run_request(f"question {number}", id=f"q{number}"))
        record = result(peer, "q3")
        RunRecord.model_validate(record)
        assert record["run_id"] == "q3"
        assert (record["state"], record["source"], record["query"]) == ("done", "zmq", "question 3")
        assert [event["type"] for event in record["events"]] == [
            "CallSkillAction",
            "SkillResultObservation",
            "FinalAnswerAction",
        ]
        assert record["queued_at"] <= record["started_at"] <= record["finished_at"]
        listed = ask(peer, {"v": 1, "id": "l", "op": "runs", "limit": 3})
        RunsResult.model_validate(listed)
        assert [run["run_id"] for run in listed["runs"]] == ["q4", "q3", "q2"]
        assert listed["runs"][0]["answer"] == COUNTED
        missing = result(peer, "never-was")
        assert (missing["kind"], missing["code"]) == ("error", "not_found")
        status = server.status_reply("s")
        StatusResult.model_validate(status)
        assert status["journal"]["state"] == "ok"
        assert status["journal"]["runs"] == 5


def test_every_way_a_run_ends_is_kept(tmp_path: Path) -> None:
    config = "[daemon]\nshutdown_grace_s = 0.05\n"
    path = tmp_path / "journal.sqlite3"
    with daemon(tmp_path, HANG, config) as (server, _, skills, peer):
        peer.send(run_request(id="running"))
        assert skills.entered.wait(10)
        peer.send(run_request(id="cancelled"))
        peer.send(run_request(id="late", deadline_ms=50))
        peer.send(run_request(id="waiting"))
        wait_for(lambda: len(server.runs) == 3, 10)
        cancel = ask(peer, {"v": 1, "id": "c", "op": "cancel", "target": "cancelled"})
        assert cancel["cancelled"]
        wait_for(lambda: len(server.runs) == 1, 10)  # "late" expired in the queue
        server.stop()
        wait_for(lambda: server.lifecycle.phase == "stopped", 20)
    with contextlib.closing(sqlite3.connect(path)) as db:
        ends = {
            row[0]: row[1:] for row in db.execute("SELECT id, state, outcome, reason FROM runs")
        }
    assert ends["cancelled"] == ("done", "interrupted", None)
    assert ends["late"] == ("interrupted", "interrupted", "deadline")
    assert ends["waiting"] == ("interrupted", "interrupted", "shutting_down")
    assert ends["running"][0] in ("done", "interrupted")  # interrupted at the grace's end
    with contextlib.closing(sqlite3.connect(path)) as db:
        blob = db.execute("SELECT result FROM runs WHERE id = 'cancelled'").fetchone()[0]
    events = msgpack.unpackb(blob)["state"]["events"]
    assert events[-1] == {"type": "InterruptedObservation", "reason": "cancelled"}


def test_with_the_journal_off_keys_are_ignored_and_reads_say_so(tmp_path: Path) -> None:
    with daemon(tmp_path, SCRIPT, "enabled = false\n") as (server, _, skills, peer):
        ask(peer, run_request(id="a", key="same"))
        ask(peer, run_request(id="b", key="same"))
        assert skills.calls == 2
        for request in (
            {"v": 1, "id": "r", "op": "result", "target": "a"},
            {"v": 1, "id": "l", "op": "runs"},
        ):
            reply = ask(peer, request)
            assert (reply["kind"], reply["code"]) == ("error", "no_journal")
            assert "off" in reply["message"]
        assert server.status()["journal"]["state"] == "off"
    assert not (tmp_path / "journal.sqlite3").exists()


# -- hostile input to the new fields ----------------------------------------------------------

ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=300),
    st.binary(max_size=40),
    st.lists(st.integers(min_value=0, max_value=1000), max_size=3),
)


def valid_text(value: Any, printable: bool) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= 128
        and (value.isprintable() if printable else True)
    )


def valid_limit(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1000


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Peer]]:
    with daemon(tmp_path_factory.mktemp("fuzz"), SCRIPT) as (server, _, _, peer):
        ask(peer, run_request(id="known", key="known-key"))
        yield server, peer


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    op=st.sampled_from(["result", "runs", "run"]),
    value=st.one_of(ANYTHING, st.sampled_from(["known", "known-key", "x" * 128, "x" * 129])),
    extra=st.one_of(st.none(), st.just({"target": "known", "limit": 1})),
)
def test_hostile_new_fields_get_one_clear_reply(
    fuzzed: tuple[Server, Peer], op: str, value: Any, extra: dict[str, Any] | None
) -> None:
    _, peer = fuzzed
    field = {"result": "target", "runs": "limit", "run": "key"}[op]
    request: dict[str, Any] = {"v": 1, "id": "h", "op": op, field: value, **(extra or {})}
    if op == "run":
        request["query"] = run_request()["query"]  # the known run's: its key answers with it
    reply = ask(peer, request)
    valid = {
        "result": valid_text(value, printable=False),
        "runs": valid_limit(value),
        "run": value is None or valid_text(value, printable=True),
    }[op] and not extra  # each op takes one of `target` and `limit`, never both
    if not valid:
        assert (reply["kind"], reply["code"]) == ("error", "bad_request"), reply
        assert len(reply["message"]) <= 300
        return
    assert reply["kind"] == "result" or reply["code"] == "not_found", reply
    if op == "run" and value == "known-key":
        assert reply["run_id"] == "known"
    if op == "runs":
        assert len(reply["runs"]) <= value
    assert ask(peer, {"v": 1, "id": "s", "op": "status"})["kind"] == "result"


# -- a journal that cannot be used never costs a run ------------------------------------------


def test_a_corrupt_journal_file_is_replaced_and_runs_are_answered(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    path.write_bytes(b"\x00garbage" * 1000)
    with daemon(tmp_path, SCRIPT, path=path) as (server, _, _, peer):
        assert ask(peer, run_request(id="a"))["answer"] == COUNTED
        assert result(peer, "a")["state"] == "done"
        assert server.status()["journal"]["state"] == "ok"
    assert list(tmp_path.glob("journal.sqlite3.corrupt-*"))


@contextlib.contextmanager
def tmpfs(where: Path, options: str) -> Iterator[Path]:
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


ROOT = pytest.mark.skipif(__import__("os").geteuid() != 0, reason="mounting a tmpfs needs root")


@ROOT
def test_a_read_only_journal_directory_leaves_the_daemon_answering(tmp_path: Path) -> None:
    with (
        tmpfs(tmp_path / "ro", "size=1m,ro") as mount,
        daemon(tmp_path, SCRIPT, path=mount / "journal.sqlite3") as (server, _, skills, peer),
    ):
        for number in range(3):
            assert ask(peer, run_request(id=f"r{number}", key="k"))["answer"] == COUNTED
        assert skills.calls == 3  # nothing to remember the key by: each ran
        journal = server.status()["journal"]
        assert journal["state"] == "degraded"
        assert journal["problem"]
        reply = result(peer, "r0")
        assert (reply["kind"], reply["code"]) == ("error", "no_journal")


@ROOT
def test_a_full_disk_leaves_the_daemon_answering(tmp_path: Path) -> None:
    with (
        tmpfs(tmp_path / "full", "size=256k") as mount,
        daemon(tmp_path, SCRIPT, path=mount / "journal.sqlite3") as (server, _, _, peer),
    ):
        with contextlib.suppress(OSError):
            (mount / "filler").write_bytes(b"\0" * (1024 * 1024))
        for number in range(40):
            query = f"question {number} " + "x" * 3000
            assert ask(peer, run_request(query, id=f"r{number}"))["answer"] == COUNTED
        server.journal.flush()
        assert server.status()["journal"]["state"] == "degraded"
        assert ask(peer, {"v": 1, "id": "s", "op": "status"})["kind"] == "result"
