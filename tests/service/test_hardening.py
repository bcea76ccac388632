"""Issue 11: what a careless plugin or a hostile client could do to a run, reproduced first.

- Defect 1: a skill that raises a BaseException, or hangs with no timeout, wedged the run thread.
- Defect 8: odd skill results (very deep, very large, unencodable, unprintable) lost the run.
- Defect 9: a small frame nested ~1,000 deep was answered ``internal`` and logged at ERROR.
- Defect 10: a deadline or cancel during the last step, or with no retries left, did not end the
  run ``interrupted``, and every cancelled run recorded a spurious ValidationErrorObservation.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from daemon_harness import (
    ANSWER,
    QUICK_STOP,
    Peer,
    call,
    hanging_registry,
    run_request,
    running_server,
    start_daemon,
    stop_daemon,
    wait_for,
    wait_ready,
    write_mock,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd import (
    Agent,
    AgentState,
    InterruptedObservation,
    MockModel,
    Registry,
    SkillResultObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from edge_agentd.agent.events import STATE_ADAPTER
from edge_agentd.agent.jsonvalues import to_jsonable
from edge_agentd.agent.registry import SkillOptions


class PluginPanic(BaseException):
    """A BaseException subclass of a plugin's own."""


BASE_EXCEPTIONS = [KeyboardInterrupt, GeneratorExit, SystemExit, PluginPanic]


def types(state: AgentState) -> list[str]:
    return [event.type for event in state.stream]


def packs(state: AgentState) -> None:
    """The run's state goes on the wire: msgpack and JSON both take it."""
    dumped = STATE_ADAPTER.dump_python(state, mode="json")
    msgpack.packb(dumped, use_bin_type=True)
    json.dumps(dumped)


# -- defect 1: a skill cannot wedge a run ------------------------------------------------------


@pytest.mark.parametrize("raised", BASE_EXCEPTIONS)
def test_a_skill_raising_a_base_exception_is_a_tool_error(raised: type[BaseException]) -> None:
    registry = Registry()

    @registry.skill
    def rogue() -> str:
        """Raises what no skill should."""
        raise raised("from the plugin")

    state = Agent(MockModel([call("rogue"), ANSWER]), registry).run("q")
    assert types(state) == [
        "CallSkillAction",
        "ToolErrorObservation",
        "FinalAnswerAction",
    ]
    error = state.stream[1]
    assert isinstance(error, ToolErrorObservation)
    assert error.error.startswith(raised.__name__)
    assert state.outcome == "answered"


@pytest.mark.parametrize("reason", ["deadline", "cancelled"])
def test_deadline_and_cancel_reach_a_skill_with_no_timeout(reason: str) -> None:
    release, entered = threading.Event(), threading.Event()
    registry = hanging_registry(release, entered)
    seen: list[str] = []
    try:
        if reason == "deadline":
            kwargs: dict[str, Any] = {"deadline": time.monotonic() + 1.0}
        else:
            kwargs = {"should_stop": entered.is_set}
        state = Agent(MockModel([call("hang"), ANSWER]), registry).run(
            "q", on_event=lambda e: seen.append(e.type), **kwargs
        )
        assert types(state) == ["CallSkillAction", "InterruptedObservation"]
        assert state.stream[-1] == InterruptedObservation(reason=reason)  # type: ignore[arg-type]
        assert state.outcome == "interrupted"
    finally:
        release.set()
    time.sleep(0.1)  # the abandoned skill returns: the finished run is untouched
    assert seen == types(state)


def test_the_serving_loop_times_out_a_skill_and_the_run_streams_on(
    context: zmq.Context[Any],
) -> None:
    """Over real sockets: the serving loop watches the run's skills. A skill past its timeout
    is abandoned there, and a fresh run thread carries the run on to its answer; the events
    stream in order, the timeout's among them, and the next run is served."""
    release = threading.Event()
    registry = Registry()

    @registry.skill(timeout=0.3)
    def slow_sensor() -> str:
        """Reads a sensor that has stopped answering."""
        release.wait(60)
        return "late"

    peer: Peer | None = None
    try:
        with running_server([call("slow_sensor"), ANSWER], registry=registry) as (_, endpoint):
            peer = Peer(context, endpoint)
            peer.send(run_request(id="r1", stream=True))
            replies = peer.until_final(30)
            events = [reply for reply in replies if reply["kind"] == "event"]
            assert [e["seq"] for e in events] == list(range(len(events)))
            assert [e["event"]["type"] for e in events] == [
                "CallSkillAction",
                "ToolErrorObservation",
                "FinalAnswerAction",
            ]
            assert "timeout" in events[1]["event"]["error"]
            final = replies[-1]
            assert (final["kind"], final["id"], final["outcome"]) == ("result", "r1", "answered")
            assert [e["type"] for e in final["state"]["events"]] == [
                e["event"]["type"] for e in events
            ]
            peer.send(run_request(id="r2"))
            later = peer.until_final(30)[-1]
            assert (later["kind"], later["id"], later["outcome"]) == ("result", "r2", "answered")
            assert "still running" in later["state"]["events"][1]["error"]
    finally:
        release.set()
        if peer is not None:
            peer.close()


@pytest.mark.parametrize("wedge", ["KeyboardInterrupt", "GeneratorExit", "deadline", "cancel"])
def test_runs_are_answered_after_wedging_skills(context: zmq.Context[Any], wedge: str) -> None:
    """Over real sockets: a skill raises a BaseException, or hangs with no timeout until its
    run's deadline or a cancel. That run gets its one result, and so do the runs after it."""
    release, entered = threading.Event(), threading.Event()
    registry = Registry()

    @registry.skill(timeout=None)
    def trouble() -> str:
        """Raises what no skill should, or hangs."""
        entered.set()
        if wedge in ("KeyboardInterrupt", "GeneratorExit"):
            raise {"KeyboardInterrupt": KeyboardInterrupt, "GeneratorExit": GeneratorExit}[wedge]
        release.wait(60)
        return "late"

    # The MockModel starts its script over for every run.
    peer: Peer | None = None
    try:
        with running_server([call("trouble"), ANSWER], registry=registry) as (server, endpoint):
            peer = Peer(context, endpoint)
            peer.send(
                run_request(id="r1", **({"deadline_ms": 1500} if wedge == "deadline" else {}))
            )
            if wedge == "cancel":
                assert entered.wait(30)
                peer.send({"v": 1, "id": "c1", "op": "cancel", "target": "r1"})
                replies = {reply["id"]: reply for reply in (peer.recv(30), peer.recv(30))}
                assert replies["c1"]["was"] == "running"
                first = replies["r1"]
            else:
                first = peer.recv(30)
            assert first["kind"] == "result"
            events = first["state"]["events"]
            if wedge in ("deadline", "cancel"):
                assert first["outcome"] == "interrupted"
                reason = "deadline" if wedge == "deadline" else "cancelled"
                assert events[-1] == {"type": "InterruptedObservation", "reason": reason}
            else:
                assert first["outcome"] == "answered"
                assert events[1]["type"] == "ToolErrorObservation"
                assert events[1]["error"].startswith(wedge)
            wait_for(lambda: server.status()["state"] == "ready", 30)
            for n in range(2, 4):
                # The next runs call the same skill: it raises again, or is still stuck (a
                # ToolErrorObservation saying so); either way they are answered.
                peer.send(run_request(id=f"r{n}"))
                later = peer.recv(30)
                assert (later["kind"], later["id"], later["outcome"]) == (
                    "result",
                    f"r{n}",
                    "answered",
                )
                assert later["state"]["events"][1]["type"] == "ToolErrorObservation"
            assert peer.silent(0.1)
            assert server.status()["state"] == "ready"
    finally:
        release.set()
        if peer is not None:
            peer.close()


# -- defect 10: a deadline or cancel always ends the run interrupted ---------------------------


@pytest.mark.parametrize("max_iterations", [1, 3])
@pytest.mark.parametrize("max_retries", [0, 3])
@pytest.mark.parametrize("reason", ["deadline", "cancelled"])
def test_an_interrupted_step_ends_the_run_interrupted_with_no_spurious_events(
    max_iterations: int, max_retries: int, reason: str
) -> None:
    registry = Registry()

    @registry.skill
    def quick() -> str:
        """Returns at once."""
        return "ok"

    steps = [call("quick")] * (max_iterations - 1)
    # The last allowed step is a slow reply: the deadline or the cancel lands during it.
    model = MockModel([*steps, {"text": ANSWER, "delay_s": 60}])
    last_step_started = lambda: len(model.calls) >= max_iterations  # noqa: E731
    if reason == "deadline":
        kwargs: dict[str, Any] = {"deadline": time.monotonic() + 2.0}
    else:
        kwargs = {"should_stop": last_step_started}
    state = Agent(model, registry).run(
        "q", max_iterations=max_iterations, max_retries=max_retries, **kwargs
    )
    assert state.outcome == "interrupted"
    assert state.stream[-1] == InterruptedObservation(reason=reason)  # type: ignore[arg-type]
    assert not any(isinstance(e, ValidationErrorObservation) for e in state.stream)
    assert types(state).count("InterruptedObservation") == 1


# -- defect 8: odd skill results ---------------------------------------------------------------


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")

    __repr__ = __str__


def deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


ODD_RESULTS: dict[str, Any] = {
    "deep": deep_list(1000),
    "big": 2**70,
    "negative": -(2**70),
    "huge": 10**5000,
    "surrogate": "a\ud800b",
    "unprintable": Unprintable(),
    "odd_keys": {Unprintable(): 1, 10**5000: 2, "\udfff": 3},
    "in_a_list": [Unprintable(), 2**70, "\ud800", deep_list(100)],
}


@pytest.mark.parametrize("kind", sorted(ODD_RESULTS))
def test_odd_skill_results_become_a_result_and_go_on_the_wire(kind: str) -> None:
    registry = Registry()
    registry.add(lambda: ODD_RESULTS[kind], SkillOptions(name="odd"))
    state = Agent(MockModel([call("odd"), ANSWER]), registry).run("q")
    assert state.outcome == "answered"
    assert isinstance(state.stream[1], SkillResultObservation | ToolErrorObservation)
    packs(state)


class NoStr:
    def __str__(self) -> str:
        raise ValueError("the sensor went away")

    __repr__ = __str__


@pytest.mark.parametrize(
    "result",
    [NoStr(), [1, NoStr()], {"reading": NoStr()}, {NoStr(): 1}],
    ids=["value", "in-a-list", "in-a-map", "a-key"],
)
def test_a_result_that_cannot_be_shown_is_the_skills_failure_naming_type_and_error(
    result: Any,
) -> None:
    # Issue 20: it reached the model as a SkillResultObservation holding
    # '<NoStr that cannot be shown: ValueError>', as if that were the reading.
    registry = Registry()
    registry.add(lambda: result, SkillOptions(name="odd"))
    state = Agent(MockModel([call("odd"), ANSWER]), registry).run("q")
    observation = state.stream[1]
    assert isinstance(observation, ToolErrorObservation), observation
    assert observation.skill_name == "odd"
    assert "NoStr" in observation.error and "ValueError" in observation.error
    assert "the sensor went away" in observation.error
    assert state.outcome == "answered"
    packs(state)


LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.integers(min_value=2**63, max_value=2**200)
)
JSONISH: st.SearchStrategy[Any] = st.deferred(
    lambda: (
        LEAVES
        | st.lists(JSONISH, max_size=3)
        | st.tuples(JSONISH, JSONISH)
        | st.dictionaries(st.text(max_size=4) | st.integers(), JSONISH, max_size=3)
    )
)


@settings(max_examples=200, deadline=None)
@given(JSONISH)
def test_to_jsonable_always_gives_msgpack_and_json_safe_values(value: Any) -> None:
    safe = to_jsonable(value)
    msgpack.packb(safe, use_bin_type=True)
    json.dumps(safe, allow_nan=False)


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=40, max_value=3000))
def test_to_jsonable_bounds_any_depth(depth: int) -> None:
    safe = to_jsonable(deep_list(depth))
    msgpack.packb(safe, use_bin_type=True)
    json.dumps(safe)


def test_odd_skill_results_are_answered_by_the_daemon(context: zmq.Context[Any]) -> None:
    registry = Registry()

    @registry.skill
    def odd(kind: str) -> Any:
        """Returns an odd value."""
        return ODD_RESULTS[kind]

    kinds = sorted(ODD_RESULTS)
    script = [reply for kind in kinds for reply in (call("odd", kind=kind), ANSWER)]
    with running_server(script, registry=registry) as (_, endpoint):
        peer = Peer(context, endpoint)
        try:
            for kind in kinds:
                peer.send(run_request(id=kind))
                reply = peer.recv(30)
                assert (reply["kind"], reply.get("outcome")) == ("result", "answered"), reply
        finally:
            peer.close()


# -- defect 9: deeply nested frames are client mistakes ----------------------------------------

DEEP = b"\x91" * 1000 + b"\xc0"


def nested_frame(field: str) -> bytes:
    request = {"v": 1, "id": "deep", "op": "status"}
    request[field] = 0
    return msgpack.packb(request).replace(
        msgpack.packb(field) + b"\x00", msgpack.packb(field) + DEEP
    )


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (nested_frame("v"), "unsupported_version"),
        (nested_frame("op"), "bad_request"),
        (nested_frame("id"), "bad_request"),
        (DEEP, "bad_request"),
        (b"\x81\xa1v" + DEEP, "unsupported_version"),
    ],
)
def test_a_deeply_nested_frame_is_a_client_mistake_logged_at_debug(
    context: zmq.Context[Any], caplog: pytest.LogCaptureFixture, frame: bytes, code: str
) -> None:
    assert len(frame) < 1100
    with running_server() as (server, endpoint):
        peer = Peer(context, endpoint)
        try:
            with caplog.at_level(logging.DEBUG):
                for _ in range(3):
                    peer.send(frame)
                    reply = peer.recv()
                    assert (reply["kind"], reply["code"]) == ("error", code)
                    assert len(reply["message"]) < 200
            assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
            assert server.status()["counters"].get("errors") == 3
        finally:
            peer.close()


# -- defect 11: SIGHUP ------------------------------------------------------------------------


def test_sighup_is_ignored_and_loses_no_run(tmp_path: Path) -> None:
    mock = write_mock(tmp_path / "mock.json", [{"text": ANSWER, "delay_s": 1}])
    sock = tmp_path / "agent.sock"
    endpoint = f"ipc://{sock}"
    daemon = start_daemon(["--model", f"mock:{mock}", "--endpoint", endpoint])
    context: zmq.Context[Any] = zmq.Context()
    try:
        wait_ready(endpoint, daemon)
        running, queued = Peer(context, endpoint), Peer(context, endpoint)
        running.send(run_request(id="in-flight", stream=True))
        assert running.recv(10)["kind"] == "accepted"
        queued.send(run_request(id="waiting"))
        daemon.send_signal(signal.SIGHUP)
        assert running.until_final(30)[-1]["outcome"] == "answered"
        assert queued.recv(30)["outcome"] == "answered"
        daemon.send_signal(signal.SIGHUP)
        running.send(run_request(id="after"))
        assert running.recv(30)["outcome"] == "answered"
        assert daemon.poll() is None and sock.exists()
    finally:
        context.destroy(linger=0)
        output = stop_daemon(daemon)
    assert daemon.returncode == 0, output
    assert "SIGHUP" in output
    assert not sock.exists()


# -- defect 6: status does not disclose other clients' ids -------------------------------------


def test_status_names_the_running_run_only_to_the_connection_that_started_it(
    context: zmq.Context[Any],
) -> None:
    with running_server([{"text": ANSWER, "delay_s": 60}], config=QUICK_STOP) as (server, endpoint):
        owner, other = Peer(context, endpoint), Peer(context, endpoint)
        requester = Peer(context, endpoint, zmq.REQ)
        try:
            owner.send(run_request(id="secret-run-id"))
            wait_for(lambda: (server.status()["running"] or {}).get("id") == "secret-run-id", 30)
            for peer, n in ((other, 1), (requester, 2)):
                peer.send({"v": 1, "id": f"s{n}", "op": "status"})
                status = peer.recv(30)
                # Told that a run is going, where from and how far along, but not its id.
                running = status["running"]
                assert status["state"] == "busy" and running is not None
                assert (running["id"], running["source"]) == (None, "zmq")
                assert running["step"] == 1 and running["max_iterations"] == 12
                assert running["seconds"] >= 0
                assert b"secret-run-id" not in msgpack.packb(status)
            owner.send({"v": 1, "id": "s0", "op": "status"})
            assert owner.recv(30)["running"]["id"] == "secret-run-id"
        finally:
            for peer in (owner, other, requester):
                peer.close()


# -- defect 6: only the connection that sent a run may cancel it ------------------------------


def test_a_run_is_cancelled_only_by_the_connection_that_sent_it(
    context: zmq.Context[Any],
) -> None:
    with running_server([{"text": ANSWER, "delay_s": 60}], config=QUICK_STOP) as (server, endpoint):
        owner, intruder = Peer(context, endpoint), Peer(context, endpoint)
        waiting = Peer(context, endpoint)
        try:
            owner.send(run_request(id="run-a"))
            wait_for(lambda: (server.status()["running"] or {}).get("id") == "run-a", 30)
            waiting.send(run_request(id="run-b"))
            wait_for(lambda: server.status()["queue_depth"] == 1, 30)
            for n, target in enumerate(["run-a", "run-b"]):
                intruder.send({"v": 1, "id": f"x{n}", "op": "cancel", "target": target})
                reply = intruder.recv(30)
                # Answered exactly as for an id that does not exist.
                assert (reply["cancelled"], reply["was"]) == (False, None)
            status = server.status()
            assert (status["running"]["id"], status["queue_depth"]) == ("run-a", 1)
            assert status["counters"].get("runs_cancelled", 0) == 0
            assert owner.silent(0.1) and waiting.silent(0.1)

            waiting.send({"v": 1, "id": "c-b", "op": "cancel", "target": "run-b"})
            replies = {r["id"]: r for r in (waiting.recv(30), waiting.recv(30))}
            assert replies["c-b"]["was"] == "queued"
            assert replies["run-b"]["outcome"] == "interrupted"
            owner.send({"v": 1, "id": "c-a", "op": "cancel", "target": "run-a"})
            replies = {r["id"]: r for r in (owner.recv(30), owner.recv(30))}
            assert replies["c-a"]["was"] == "running"
            assert replies["run-a"]["outcome"] == "interrupted"
        finally:
            for peer in (owner, intruder, waiting):
                peer.close()
