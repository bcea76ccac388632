"""Triggers in a real serving loop: a firing is a queued run whose result goes to ``triggers``
and to every ``watch``; it never takes the queue's last slot; the ops refuse what they must."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from daemon_harness import Peer, answer, call, run_request, running_server, wait_for
from hypothesis import given, settings
from hypothesis import strategies as st
from triggers_harness import PROBE, Probe, builtin_registry

from edge_agentd.agent.run import RunOptions
from edge_agentd.agent.workflow import Workflow
from edge_agentd.protocol.wire import StatusResult, WireError, decode_request
from edge_agentd.service.runs.jobs import Job
from edge_agentd.service.runs.queue import RunQueue
from edge_agentd.skills.demo import SysfsTree

CONFIG = f"""
[daemon]
queue_limit = {{limit}}

[[triggers]]
name = "freezer"
when = {{{{ skill = "read_sensor", arguments = {{{{ name = "{PROBE}" }}}}, above = -10.0, check_every = "1s" }}}}
query = "Is the freezer too warm?"
"""


@pytest.fixture
def context() -> Any:
    ctx = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def request(op: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "id": uuid.uuid4().hex, "op": op, **fields}


def entry(peer: Peer) -> dict[str, Any]:
    peer.send(request("triggers"))
    reply = peer.recv()
    assert reply["kind"] == "result" and reply["op"] == "triggers"
    (only,) = reply["triggers"]
    return only


def test_a_firing_runs_and_its_result_reaches_triggers_and_watch(
    scripted_daemon: Any, sysfs: SysfsTree, context: Any
) -> None:
    probe = Probe(sysfs, -20.0)
    server, endpoint = scripted_daemon(
        [call("read_sensor", name=PROBE), answer("The freezer reads -5 °C.")],
        config=CONFIG.format(limit=4),
        registry=builtin_registry(sysfs.root),
    )
    watcher, asker = Peer(context, endpoint), Peer(context, endpoint)
    watch = request("watch", trigger="freezer")
    watcher.send(watch)
    wait_for(lambda: entry(asker)["counts"]["checks"] >= 1, 10)
    assert entry(asker)["state"] == "armed"
    probe.set(-5.0)
    event = watcher.recv(timeout=20)
    assert event["kind"] == "event" and event["id"] == watch["id"] and event["seq"] == 0
    run = event["event"]
    assert run["type"] == "TriggerRun" and run["trigger"] == "freezer"
    assert run["outcome"] == "answered" and run["answer"] == "The freezer reads -5 °C."
    assert run["reading"] == {
        "skill": "read_sensor",
        "arguments": {"name": PROBE},
        "value": -5.0,
        "unit": "°C",
    }
    listed = entry(asker)
    assert listed["state"] == "fired" and listed["last_run"]["answer"] == run["answer"]
    assert listed["counts"]["fired"] == 1 and not listed["running"]
    status = StatusResult.model_validate(server.status_reply("s"))
    assert status.triggers == {"configured": 1, "failing": [], "fired": 1, "skipped": 0}
    assert status.counters.runs_finished == 1
    watcher.send(request("cancel", target=watch["id"]))
    replies = {r["op"]: r for r in (watcher.recv(), watcher.recv())}
    assert replies["watch"]["sent"] == 1 and replies["watch"]["id"] == watch["id"]
    assert replies["cancel"]["cancelled"] and replies["cancel"]["was"] == "watch"


def test_a_trigger_never_takes_the_last_free_slot(
    scripted_daemon: Any, sysfs: SysfsTree, context: Any
) -> None:
    Probe(sysfs, -5.0)  # warm from the start: it fires at its first check
    release, entered = threading.Event(), threading.Event()
    registry = builtin_registry(sysfs.root)

    @registry.skill(timeout=None)
    def hang() -> str:
        """Waits until the test lets it go."""
        entered.set()
        release.wait(30)
        return "done"

    server, endpoint = scripted_daemon(
        ['{"skill_name": "hang", "arguments": {}}', answer("hung")],  # each run replays it
        config=CONFIG.format(limit=1).replace("-10.0,", '-10.0, for = "2s",'),
        registry=registry,
    )
    peer = Peer(context, endpoint)
    try:
        peer.send(run_request("hang please"))
        assert entered.wait(10)
        wait_for(lambda: entry(peer)["counts"]["skipped"] >= 1, 20)
        listed = entry(peer)
        assert listed["last_run"]["outcome"] == "skipped"
        assert "no slot to spare" in listed["last_run"]["reason"]
        assert len(server.runs) == 0  # the one slot is still free for an ask
        peer.send(run_request("and this?"))
    finally:
        release.set()
    finals = [peer.recv(timeout=20), peer.recv(timeout=20)]
    assert [(r["kind"], r["answer"]) for r in finals] == [("result", "hung")] * 2


def test_the_trigger_ops_refuse_what_they_cannot_do(
    scripted_daemon: Any, sysfs: SysfsTree, context: Any
) -> None:
    Probe(sysfs)
    _, endpoint = scripted_daemon(
        config=CONFIG.format(limit=4), registry=builtin_registry(sysfs.root)
    )
    peer = Peer(context, endpoint)
    peer.send(request("watch"), req_envelope=True)
    assert peer.recv()["code"] == "bad_request"
    peer.send(request("watch", trigger="nope"))
    reply = peer.recv()
    assert reply["code"] == "bad_request" and "nope" not in reply["message"]
    peer.send(request("watch", trigger=5))
    assert peer.recv()["code"] == "bad_request"
    watch = request("watch")
    peer.send(watch)
    peer.send(watch)
    assert peer.recv()["code"] == "bad_request"  # the same id twice
    other = Peer(context, endpoint)
    other.send(request("cancel", target=watch["id"]))
    assert other.recv()["cancelled"] is False  # another connection cannot end it


def test_asks_start_before_trigger_runs() -> None:
    queue = RunQueue(4)

    def job(name: str, trigger: str | None = None) -> Job:
        return Job(name, [b"x"], RunOptions("q", max_iterations=4, max_retries=1), False, trigger=trigger)

    queue.add(job("t1", "freezer"))
    queue.add(job("a1"))
    queue.add(job("a2"))
    started = queue.start_next()
    assert started is not None and started.request_id == "a1"
    queue.running = None
    started = queue.start_next()
    assert started is not None and started.request_id == "a2"
    queue.running = None
    started = queue.start_next()
    assert started is not None and started.request_id == "t1"
    assert queue.room_to_spare()
    busy = RunQueue(1)
    assert busy.room_to_spare()  # the model is idle: it would start at once
    busy.running = job("a3")
    assert not busy.room_to_spare()  # the one waiting slot is an ask's


def test_a_trigger_may_run_a_workflow(scripted_daemon: Any, sysfs: SysfsTree, context: Any) -> None:
    Probe(sysfs, -5.0)
    config = CONFIG.format(limit=4).replace(
        'query = "Is the freezer too warm?"', 'workflow = "alarm"'
    )
    workflow = Workflow(name="alarm", instructions="Say how warm the freezer is.")
    _, endpoint = scripted_daemon(
        [call("read_sensor", name=PROBE), answer("Alarm: -5 °C.")],
        config=config,
        registry=builtin_registry(sysfs.root),
        workflows={"alarm": workflow},
    )
    peer = Peer(context, endpoint)
    wait_for(lambda: (entry(peer)["last_run"] or {}).get("outcome") == "answered", 20)
    assert entry(peer)["last_run"]["answer"] == "Alarm: -5 °C."
    assert entry(peer)["runs"] == {"query": None, "workflow": "alarm"}


def test_after_a_restart_a_condition_that_fired_does_not_fire_again(
    sysfs: SysfsTree, tmp_path: Path, context: Any
) -> None:
    Probe(sysfs, -5.0)  # warm before, during and after the restart
    journal = tmp_path / "journal.sqlite3"
    config = CONFIG.format(limit=4) + f'\n[journal]\npath = "{journal}"\n'
    with running_server(
        [call("read_sensor", name=PROBE), answer("It is -5 °C.")], config=config, registry=builtin_registry(sysfs.root)
    ) as (first, endpoint):
        peer = Peer(context, endpoint)
        wait_for(lambda: (entry(peer)["last_run"] or {}).get("outcome") == "answered", 20)
        assert first.journal.flush()
        peer.close()
    with running_server(
        [call("read_sensor", name=PROBE), answer("again")], config=config, registry=builtin_registry(sysfs.root)
    ) as (_, endpoint):
        peer = Peer(context, endpoint)
        wait_for(lambda: entry(peer)["counts"]["checks"] >= 3, 20)  # still warm at each check
        listed = entry(peer)
        assert listed["state"] == "fired" and listed["counts"]["fired"] == 0
        assert listed["last_fired"] is not None  # when it fired before the restart
        peer.send(request("runs"))
        runs = peer.recv()["runs"]
        assert [r["source"] for r in runs] == ["trigger:freezer"]  # the one run, journaled
        peer.close()


@settings(max_examples=80, deadline=None)
@given(
    fields=st.dictionaries(
        st.sampled_from(["trigger", "target", "query", "stream", "x"]),
        st.one_of(
            st.none(), st.text(max_size=200), st.integers(-(2**63), 2**63 - 1), st.booleans()
        ),
        max_size=3,
    ),
    op=st.sampled_from(["triggers", "watch"]),
)
def test_any_trigger_op_request_decodes_or_gets_a_stable_code(
    fields: dict[str, Any], op: str
) -> None:
    frame = msgpack.packb({"v": 1, "id": "r", "op": op, **fields})
    try:
        request = decode_request(frame, max_bytes=64 * 1024, max_query_chars=4000)
    except WireError as exc:
        assert exc.code == "bad_request" and exc.request_id == "r"
        echoed = [v for v in fields.values() if isinstance(v, str) and len(v) > 40]
        assert not any(v in exc.message for v in echoed)  # an error never echoes the request
    else:
        assert request.op == op
        assert (set(fields) <= {"trigger"} and op == "watch") or not fields
