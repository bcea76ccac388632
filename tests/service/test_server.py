"""The serving loop over real ZeroMQ sockets: REQ, DEALER, streaming, scheduling and cancel."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import zmq
from daemon_harness import (
    ANSWER,
    QUICK_STOP,
    Peer,
    answer,
    call,
    hanging_registry,
    run_request,
    running_server,
    sample_registry,
    wait_for,
)

from edge_agentd.agent.workflow import Workflow
from edge_agentd.protocol.wire import RunResult, StatusResult

SLOW = {"text": ANSWER, "delay_s": 30}


@pytest.fixture
def peers(context: zmq.Context[Any]) -> Iterator[list[Peer]]:
    opened: list[Peer] = []
    yield opened
    for peer in opened:
        peer.close()


def open_peer(
    context: zmq.Context[Any], peers: list[Peer], endpoint: str, kind: int = zmq.DEALER
) -> Peer:
    peer = Peer(context, endpoint, kind)
    peers.append(peer)
    return peer


def test_req_client_gets_exactly_one_reply_even_when_it_asks_to_stream(context, peers) -> None:
    with running_server([call("add", a=2, b=3), answer("5")]) as (_, endpoint):
        req = open_peer(context, peers, endpoint, zmq.REQ)
        req.send(run_request("what is 2+3?", id="r1", stream=True))
        reply = req.recv()
        assert reply["kind"] == "result" and reply["id"] == "r1" and reply["v"] == 1
        assert reply["outcome"] == "answered" and reply["answer"] == "5"
        types = [e["type"] for e in reply["state"]["events"]]
        assert types == ["CallSkillAction", "SkillResultObservation", "FinalAnswerAction"]
        assert reply["state"]["events"][1]["result"] == 5
        assert reply["state"]["query"] == "what is 2+3?"
        # A DEALER that uses the REQ envelope is treated like REQ: one reply, same envelope back.
        dealer = open_peer(context, peers, endpoint)
        dealer.send(run_request(id="r2", stream=True), req_envelope=True)
        reply = dealer.recv()
        assert (reply["kind"], reply["_frames"]) == ("result", 2)
        assert dealer.silent()


def test_dealer_streams_accepted_events_then_the_result(context, peers) -> None:
    with running_server([call("add", a=1, b=1), answer("2")]) as (_, endpoint):
        dealer = open_peer(context, peers, endpoint)
        # A question the scripted sum answers (grounding holds every answer to its question).
        dealer.send(run_request("Add 1 and 1.", id="s1", stream=True))
        replies = dealer.until_final()
        kinds = [r["kind"] for r in replies]
        assert kinds == ["accepted", "event", "event", "event", "result"]
        assert all(r["id"] == "s1" and r["_frames"] == 1 for r in replies)
        assert [r["seq"] for r in replies[1:-1]] == [0, 1, 2]
        streamed = [r["event"] for r in replies[1:-1]]
        assert streamed == replies[-1]["state"]["events"]
        assert dealer.silent()


def test_status_and_skills(context, peers) -> None:
    workflows = {"math": Workflow("math", "Do sums.", skills=["add"])}
    with running_server(workflows=workflows) as (_, endpoint):
        dealer = open_peer(context, peers, endpoint)
        dealer.send({"v": 1, "id": "st", "op": "status"})
        status = dealer.recv()
        assert status["kind"] == "result" and status["op"] == "status"
        assert status["state"] == "ready" and status["queue_depth"] == 0
        assert status["queue_limit"] == 8 and status["workflows"] == ["math"]
        assert status["model"]["kind"] == "mock" and status["counters"]["requests"] == 1
        dealer.send({"v": 1, "id": "sk", "op": "skills"})
        skills = {s["name"]: s for s in dealer.recv()["skills"]}
        assert set(skills) == {"add", "room_temperature"}
        assert skills["add"]["parameters"]["required"] == ["a", "b"]
        assert (
            skills["add"]["timeout_s"] == 2.0
            and skills["add"]["description"] == "Add two integers."
        )
        dealer.send({"v": 1, "id": "sk2", "op": "skills", "workflow": "math"})
        assert [s["name"] for s in dealer.recv()["skills"]] == ["add"]
        dealer.send({"v": 1, "id": "sk3", "op": "skills", "workflow": "nope"})
        error = dealer.recv()
        assert (error["kind"], error["code"], error["id"]) == ("error", "bad_request", "sk3")


def test_status_and_run_replies_are_their_models_in_wire_order(context, peers) -> None:
    # The status reply is built as a plain map, not validated on each request: it must still be
    # exactly what the protocol table's StatusResult says, field for field and in its order.
    problems = [{"source": "plugin.py", "error": "ImportError: no"}]
    with running_server() as (server, endpoint):
        server.options.skill_problems = problems
        dealer = open_peer(context, peers, endpoint)
        dealer.send({"v": 1, "id": "bad", "op": "nope"})
        dealer.recv()
        dealer.send({"v": 1, "id": "st", "op": "status"})
        wire = dealer.recv()
        del wire["_frames"]
        for reply in (wire, server.status_reply("st2", [b"peer"])):
            assert list(reply) == list(StatusResult.model_fields)
            assert StatusResult.model_validate(reply).model_dump() == reply
        assert wire["skill_problems"] == problems and wire["counters"]["errors"] == 1
        # A run's result is built the same way.
        dealer.send({"v": 1, "id": "r1", "op": "run", "query": "hi"})
        result = dealer.recv()
        del result["_frames"]
        assert list(result) == list(RunResult.model_fields)
        assert RunResult.model_validate(result).model_dump() == result


def test_workflows_and_max_iterations(context, peers) -> None:
    workflows = {"math": Workflow("math", "Do sums.", skills=["add"], max_iterations=2)}
    replies = [call("add", a=1, b=1)] * 20
    config = "[daemon]\nmax_iterations = 3\nmax_iterations_cap = 5\n"
    with running_server(replies, config=config, workflows=workflows) as (_, endpoint):
        dealer = open_peer(context, peers, endpoint)
        for fields, expected in (({}, 3), ({"workflow": "math"}, 2), ({"max_iterations": 99}, 5)):
            dealer.send(run_request(**fields))
            result = dealer.recv()
            assert result["outcome"] == "max_iterations", fields
            assert result["state"]["events"][-1]["iterations"] == expected, fields
        dealer.send(run_request(workflow="unknown"))
        assert dealer.recv()["code"] == "bad_request"


BAD_FRAMES: list[tuple[list[bytes], str, str | None]] = [
    ([b"\x81\xa1v\x01", b"second frame"], "bad_request", None),
    ([b""], "bad_request", None),
    ([b"\xc1"], "bad_request", None),
    ([b"\x93\x01\x02\x03"], "bad_request", None),  # an array, not a map
    ([b"\x81\x01\x02"], "bad_request", None),  # an integer key
    ([b"\x82\xa1v\x01\xa2op\xa6status"], "bad_request", None),  # no id
    ([b"\x83\xa1v\x02\xa2id\xa1x\xa2op\xa6status"], "unsupported_version", "x"),
    ([b"\x83\xa1v\x01\xa2id\xa1x\xa2op\xa4kill"], "bad_request", "x"),
    ([b"\xdd\xff\xff\xff\xff"], "bad_request", None),  # claims 4 billion items
]


@pytest.mark.parametrize(("frames", "code", "request_id"), BAD_FRAMES)
def test_bad_frames_get_an_error_reply(context, peers, frames, code, request_id) -> None:
    with running_server() as (server, endpoint):
        dealer = open_peer(context, peers, endpoint)
        dealer.socket.send_multipart(frames)
        reply = dealer.recv()
        assert (reply["kind"], reply["code"], reply["id"]) == ("error", code, request_id)
        assert isinstance(reply["message"], str) and reply["message"]
        assert dealer.silent(0.05)
        dealer.send({"v": 1, "id": "after", "op": "status"})
        assert dealer.recv()["state"] == "ready"
        assert server.status()["counters"]["errors"] == 1


def test_too_large_requests_and_queries(context, peers) -> None:
    config = "[daemon]\nmax_request_bytes = 2048\nmax_query_chars = 100\n"
    with running_server(config=config) as (_, endpoint):
        dealer = open_peer(context, peers, endpoint)
        dealer.send(run_request("x" * 101, id="q"))
        assert (dealer.recv()["code"], "q") == ("too_large", "q")
        dealer.send(run_request("x" * 3000, id="big"))
        reply = dealer.recv()
        assert (reply["code"], reply["id"]) == ("too_large", None)
        # Far beyond the limit ZeroMQ drops the frame and the connection; the daemon lives on.
        dealer.send(b"\x00" * 100_000)
        other = open_peer(context, peers, endpoint)
        other.send({"v": 1, "id": "alive", "op": "status"})
        assert other.recv()["id"] == "alive"


def test_burst_of_200_requests_from_20_clients_none_lost_or_doubled(context) -> None:
    replies = [call("add", a=20, b=22), answer("42")]
    config = "[daemon]\nqueue_limit = 200\nqueue_per_client = 8\n"
    with running_server(replies, config=config) as (server, endpoint):
        results: dict[int, list[dict[str, Any]]] = {}
        errors: list[BaseException] = []

        def client(number: int) -> None:
            peer = Peer(context, endpoint)
            try:
                ids = [f"c{number}-{i}" for i in range(10)]
                for i, request_id in enumerate(ids):
                    op = (
                        {"op": "status"}
                        if i % 5 == 4
                        else {
                            "op": "run",
                            "query": f"Add 20 and 22 ({request_id}).",
                            "stream": i % 2 == 0,
                        }
                    )
                    peer.send({"v": 1, "id": request_id, **op})
                finals: list[dict[str, Any]] = []
                while len(finals) < len(ids):
                    reply = peer.recv(30)
                    if reply["kind"] in ("result", "error"):
                        finals.append(reply)
                assert peer.silent(0.3)
                results[number] = finals
            except BaseException as exc:
                errors.append(exc)
            finally:
                peer.close()

        threads = [threading.Thread(target=client, args=(n,)) for n in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not errors, errors
        for number, finals in results.items():
            counts = Counter(r["id"] for r in finals)
            assert counts == Counter(f"c{number}-{i}" for i in range(10))
            for reply in finals:
                assert reply["kind"] == "result", reply
                if reply["op"] == "run":
                    assert reply["answer"] == "42"
                    assert reply["state"]["query"] == f"Add 20 and 22 ({reply['id']})."
        assert len(results) == 20
        counters = server.status()["counters"]
        assert counters["runs_finished"] == 160 and counters["errors"] == 0


def test_busy_when_the_queue_is_full(context, peers) -> None:
    config = "[daemon]\nqueue_limit = 2\nshutdown_grace_s = 0.05\n"
    with running_server([SLOW], config=config) as (server, endpoint):
        dealer = open_peer(context, peers, endpoint)
        dealer.send(run_request(id="running"))
        wait_for(lambda: (server.status()["running"] or {}).get("id") == "running", 5)
        dealer.send(run_request(id="q1"))
        dealer.send(run_request(id="q2"))
        dealer.send(run_request(id="q3"))
        busy = dealer.recv()
        assert (busy["kind"], busy["code"], busy["id"]) == ("error", "busy", "q3")
        dealer.send(run_request(id="q1"))
        duplicate = dealer.recv()
        assert (duplicate["code"], duplicate["id"]) == ("bad_request", "q1")
        status = server.status()
        assert status["state"] == "busy" and status["queue_depth"] == 2


def test_an_idle_model_takes_one_run_beyond_the_queue_limit_even_in_a_burst(context, peers) -> None:
    """Requests read in one wake-up, before the first is started, must not see a free model as
    busy: the limit counts the runs that wait, not the one about to run."""
    config = "[daemon]\nqueue_limit = 1\nshutdown_grace_s = 0.05\n"
    with running_server([SLOW], config=config) as (server, endpoint):
        dealer = open_peer(context, peers, endpoint)
        for name in ("first", "second", "third"):
            dealer.send(run_request(id=name, stream=True))
        replies = [dealer.recv() for _ in range(3)]
        kinds = {(r["id"], r["kind"], r.get("code")) for r in replies}
        assert ("first", "accepted", None) in kinds and ("second", "accepted", None) in kinds
        assert ("third", "error", "busy") in kinds
        wait_for(lambda: (server.status()["running"] or {}).get("id") == "first", 5)
        assert server.status()["queue_depth"] == 1


def test_status_is_answered_at_once_mid_run(context, peers) -> None:
    with running_server([SLOW], config=QUICK_STOP) as (server, endpoint):
        dealer = open_peer(context, peers, endpoint)
        dealer.send(run_request(id="long"))
        wait_for(lambda: (server.status()["running"] or {}).get("id") == "long", 5)
        req = open_peer(context, peers, endpoint, zmq.REQ)
        started = time.monotonic()
        req.send({"v": 1, "id": "st", "op": "status"})
        status = req.recv(2)
        assert time.monotonic() - started < 1.0
        # Another connection is told the daemon is busy, not whose run it is (issue 11).
        assert status["state"] == "busy" and status["running"]["id"] is None
    # Past the shutdown grace the run in flight is interrupted, and still answered.
    result = dealer.recv()
    assert result["outcome"] == "interrupted"
    assert result["state"]["events"][-1]["reason"] == "cancelled"


def test_status_says_which_run_is_going_its_source_step_and_seconds(context, peers) -> None:
    replies = [call("add", a=1, b=2), SLOW]
    with running_server(replies, config=QUICK_STOP, registry=sample_registry()) as (
        server,
        endpoint,
    ):
        asker = open_peer(context, peers, endpoint)
        asker.send(run_request(id="via-mqtt", source="mqtt", max_iterations=5))
        # The add's result ended step 1; the model now thinks over step 2.
        wait_for(lambda: (server.status()["running"] or {}).get("step") == 2, 10)
        other = open_peer(context, peers, endpoint, zmq.REQ)
        other.send({"v": 1, "id": "st", "op": "status"})
        reply = other.recv(5)
        del reply["_frames"]
        status = StatusResult.model_validate(reply)
        assert status.state == "busy" and status.running is not None
        assert status.running.model_dump() == {
            "id": None,
            "source": "mqtt",
            "step": 2,
            "max_iterations": 5,
            "seconds": status.running.seconds,
        }
        assert status.running.seconds >= 0
    assert server.status()["running"] is None


def test_a_triggers_run_says_its_trigger_as_its_source() -> None:
    from edge_agentd.agent.run import RunOptions
    from edge_agentd.service.runs.jobs import Job

    fired = Job("t1", [], RunOptions("q"), False, trigger="morning")
    asked = Job("a1", [b"x"], RunOptions("q"), False, asked_over="mqtt")
    assert (fired.source, asked.source) == ("trigger:morning", "mqtt")


def test_deadline_interrupts_a_run_and_expires_a_queued_one(context, peers) -> None:
    with running_server([SLOW]) as (server, endpoint):
        dealer = open_peer(context, peers, endpoint)
        waiting = open_peer(context, peers, endpoint)
        dealer.send(run_request(id="d1", deadline_ms=300))
        wait_for(lambda: (server.status()["running"] or {}).get("id") == "d1", 5)
        waiting.send(run_request(id="d2", deadline_ms=100))
        expired = waiting.recv(5)
        assert (expired["kind"], expired["code"], expired["id"]) == ("error", "deadline", "d2")
        result = dealer.recv(5)
        assert result["kind"] == "result" and result["outcome"] == "interrupted"
        last = result["state"]["events"][-1]
        assert last == {"type": "InterruptedObservation", "reason": "deadline"}


def test_cancel_a_queued_and_a_running_run(context, peers) -> None:
    with running_server([SLOW]) as (server, endpoint):
        first = open_peer(context, peers, endpoint)
        second = open_peer(context, peers, endpoint)
        first.send(run_request(id="run-a", stream=True))
        assert first.recv()["kind"] == "accepted"
        wait_for(lambda: (server.status()["running"] or {}).get("id") == "run-a", 5)
        second.send(run_request(id="run-b"))
        wait_for(lambda: server.status()["queue_depth"] == 1, 5)

        # Each run is cancelled by the connection that sent it (issue 11).
        second.send({"v": 1, "id": "c1", "op": "cancel", "target": "run-b"})
        replies_b = {reply["id"]: reply for reply in (second.recv(), second.recv())}
        assert replies_b["c1"] | {"_frames": 0} == {
            "v": 1,
            "id": "c1",
            "kind": "result",
            "op": "cancel",
            "target": "run-b",
            "cancelled": True,
            "was": "queued",
            "_frames": 0,
        }
        queued = replies_b["run-b"]
        assert queued["outcome"] == "interrupted"
        assert queued["state"]["events"] == [
            {"type": "InterruptedObservation", "reason": "cancelled"}
        ]

        first.send({"v": 1, "id": "c2", "op": "cancel", "target": "run-a"})
        replies = [first.recv()]
        while not any(r["id"] == "run-a" and r["kind"] == "result" for r in replies):
            replies.append(first.recv())
        assert next(r for r in replies if r["id"] == "c2")["was"] == "running"
        final = replies[-1]
        assert final["outcome"] == "interrupted"
        assert final["state"]["events"][-1]["reason"] == "cancelled"

        first.send({"v": 1, "id": "c3", "op": "cancel", "target": "run-a"})
        assert first.recv()["cancelled"] is False
        assert server.status()["counters"]["runs_cancelled"] == 2


def test_status_says_loading_and_runs_wait_for_the_model(context, peers) -> None:
    from edge_agentd.model.scripted import MockModel

    release = threading.Event()

    def slow_load() -> MockModel:
        release.wait(10)
        return MockModel([ANSWER])

    with running_server(load=slow_load, wait_ready=False) as (_, endpoint):
        dealer = open_peer(context, peers, endpoint)
        dealer.send({"v": 1, "id": "st", "op": "status"})
        assert dealer.recv()["state"] == "loading"
        dealer.send(run_request(id="early"))
        assert dealer.silent(0.1)
        release.set()
        assert dealer.recv()["outcome"] == "answered"


def test_a_model_that_fails_to_load_answers_internal_and_stops(context, peers) -> None:
    def broken() -> Any:
        time.sleep(0.2)
        raise OSError("no such GGUF")

    with running_server(load=broken, wait_ready=False) as (server, endpoint):
        dealer = open_peer(context, peers, endpoint)
        dealer.send(run_request(id="x"))
        reply = dealer.recv()
        assert (reply["code"], reply["id"]) == ("internal", "x")
        assert "no such GGUF" in reply["message"]
        wait_for(lambda: server.exit_code == 1, 5)


def test_a_model_that_cannot_be_used_exits_78_in_one_line(
    context, peers, caplog: pytest.LogCaptureFixture
) -> None:
    from edge_agentd.model.gguf import ModelLoadError

    def unusable() -> Any:
        raise ModelLoadError("llama.cpp could not create a context; try a smaller n_ctx")

    with running_server(load=unusable, wait_ready=False) as (server, _):
        wait_for(lambda: server.exit_code == 78, 5)  # EX_CONFIG: systemd does not restart it
    failures = [r for r in caplog.records if "failed to load" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is None
    assert "try a smaller n_ctx" in failures[0].getMessage()


def test_stop_answers_queued_runs_and_lets_the_running_one_finish(context, peers) -> None:
    replies = [{"text": ANSWER, "delay_s": 0.3}]
    with running_server(replies, config="[daemon]\nshutdown_grace_s = 5\n") as (server, endpoint):
        running = open_peer(context, peers, endpoint)
        queued = open_peer(context, peers, endpoint)
        running.send(run_request(id="in-flight"))
        wait_for(lambda: (server.status()["running"] or {}).get("id") == "in-flight", 5)
        queued.send(run_request(id="waiting"))
        wait_for(lambda: server.status()["queue_depth"] == 1, 5)
        server.stop()
        assert queued.recv()["code"] == "shutting_down"
        assert running.recv()["outcome"] == "answered"


def test_ids_are_per_request_and_replies_go_to_their_own_client(context, peers) -> None:
    with running_server([answer("I cannot tell: one.")]) as (_, endpoint):
        a = open_peer(context, peers, endpoint)
        b = open_peer(context, peers, endpoint)
        a.send(run_request(id=uuid.uuid4().hex))
        b.send({"v": 1, "id": "b", "op": "status"})
        assert b.recv()["op"] == "status"
        assert a.recv()["answer"] == "I cannot tell: one."
        assert a.silent(0.05) and b.silent(0.05)


def test_a_run_that_ignores_interruption_is_answered_shutting_down_within_the_bound(
    context, peers, monkeypatch
) -> None:
    import edge_agentd.service.shutdown

    monkeypatch.setattr(edge_agentd.service.shutdown, "INTERRUPT_WAIT_S", 0.2)
    release = threading.Event()

    class HungModel:
        def generate(self, prompt: str, **kwargs: Any) -> str:
            release.wait(30)  # deaf to should_stop, like a stuck native call
            return ANSWER

    model = HungModel()
    try:
        with running_server(load=lambda: model, config=QUICK_STOP) as (server, endpoint):
            dealer = open_peer(context, peers, endpoint)
            dealer.send(run_request(id="stuck"))
            wait_for(lambda: (server.status()["running"] or {}).get("id") == "stuck", 5)
            server.stop()
            # The model stays stuck for 30 s: a reply at all means the bound, not the model,
            # ended the wait.
            reply = dealer.recv(15)
            assert (reply["kind"], reply["code"], reply["id"]) == (
                "error",
                "shutting_down",
                "stuck",
            )
            assert not release.is_set()
    finally:
        release.set()


def test_shutdown_cancels_a_run_whose_skill_hangs_and_leaves_no_run_behind(context, peers) -> None:
    """Shutdown's cancel reaches a skill with no timeout through the serving loop's watch: the
    client gets its run back interrupted, and no run is left for exit to wait on."""
    release, entered = threading.Event(), threading.Event()
    registry = hanging_registry(release, entered)
    try:
        replies = [call("hang"), ANSWER]
        with running_server(replies, registry=registry, config=QUICK_STOP) as (server, endpoint):
            dealer = open_peer(context, peers, endpoint)
            dealer.send(run_request(id="hung"))
            assert entered.wait(10)
            assert server.worker_alive
            server.stop()
            reply = dealer.recv(10)
            assert (reply["kind"], reply["id"], reply["outcome"]) == (
                "result",
                "hung",
                "interrupted",
            )
            assert reply["state"]["events"][-1] == {
                "type": "InterruptedObservation",
                "reason": "cancelled",
            }
        assert not server.worker_alive
    finally:
        release.set()


def test_a_run_that_cannot_start_is_answered_internal_and_the_next_one_is_served(
    context, peers
) -> None:
    from edge_agentd import MockModel

    class ResetsBadlyOnce(MockModel):
        failed = False

        def reset(self) -> None:
            if not self.failed:
                self.failed = True
                raise OSError("the model's device went away")
            super().reset()

    model = ResetsBadlyOnce([ANSWER])
    with running_server(load=lambda: model) as (_, endpoint):
        dealer = open_peer(context, peers, endpoint)
        dealer.send(run_request(id="first"))
        first = dealer.until_final(10)[-1]
        assert (first["kind"], first["id"], first["code"]) == ("error", "first", "internal")
        dealer.send(run_request(id="second"))
        second = dealer.until_final(10)[-1]
        assert (second["kind"], second["id"], second["outcome"]) == ("result", "second", "answered")


def test_undeliverable_replies_are_counted_not_lost_silently(context, peers) -> None:
    with running_server([{"text": ANSWER, "delay_s": 0.2}]) as (server, endpoint):
        leaver = Peer(context, endpoint)
        leaver.send(run_request(id="gone"))
        wait_for(lambda: (server.status()["running"] or {}).get("id") == "gone", 5)
        leaver.close()
        wait_for(lambda: server.status()["counters"]["replies_dropped"] == 1, 5)
        other = open_peer(context, peers, endpoint)
        other.send(run_request(id="next"))
        assert other.recv()["outcome"] == "answered"
