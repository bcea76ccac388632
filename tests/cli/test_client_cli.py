"""The Python client and the ``edge-agent`` command against real daemons, and their exit codes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from daemon_harness import ANSWER, QUICK_STOP, answer, wait_for, write_mock

from edge_agentd.client.askoptions import AskOptions
from edge_agentd.client.zmqclient import BadEndpoint, Client, DaemonError, Timeout, Unavailable

DaemonProcess = Callable[..., AbstractContextManager[str]]  # conftest.py
ScriptedDaemon = Callable[..., tuple[Any, str]]  # conftest.py
EDGE_AGENT = str(Path(sys.executable).with_name("edge-agent"))


def edge_agentd(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EDGE_AGENT, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def mock_daemon(
    tmp_path_factory: pytest.TempPathFactory, daemon_process: DaemonProcess
) -> Iterator[str]:
    """``edge-agent serve --model mock:FILE`` on an ipc socket, as the README runs it."""
    directory = tmp_path_factory.mktemp("daemon")
    mock = write_mock(directory / "mock.json", ["not json", answer("I cannot tell how warm the kitchen is.")])
    config = directory / "edge.toml"
    config.write_text(
        "[daemon]\nmax_query_chars = 50\n[workflows.kitchen]\ninstructions = 'Kitchen only.'\n",
        encoding="utf-8",
    )
    endpoint = f"ipc://{directory / 'agent.sock'}"
    args = ["--config", str(config), "--model", f"mock:{mock}"]
    with daemon_process(args, endpoint, clean_exit=True):
        yield endpoint


def test_ask_prints_the_answer(mock_daemon: str) -> None:
    done = edge_agentd("ask", "How warm is the kitchen?", "--endpoint", mock_daemon)
    assert (done.returncode, done.stdout) == (0, "I cannot tell how warm the kitchen is.\n"), done.stderr


def test_ask_json_is_one_object_for_home_assistant(mock_daemon: str) -> None:
    done = edge_agentd("ask", "How warm?", "--json", "--timeout", "10", "--endpoint", mock_daemon)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["answer"] == "I cannot tell how warm the kitchen is." and result["outcome"] == "answered"
    assert [e["type"] for e in result["events"]] == [
        "ValidationErrorObservation",
        "FinalAnswerAction",
    ]
    assert result["query"] == "How warm?"


def test_ask_stream_is_json_lines_to_the_end_the_answer_last(mock_daemon: str) -> None:
    # A script reads --stream line by line: every line is one JSON object, each event as it
    # happens and then the object --json prints, answer and all (not a bare answer line).
    done = edge_agentd(
        "ask", "How warm?", "--stream", "--workflow", "kitchen", "--endpoint", mock_daemon
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line.get("type") for line in lines[:2]] == [
        "ValidationErrorObservation",
        "FinalAnswerAction",
    ]
    (last,) = lines[2:]
    assert (last["answer"], last["outcome"], last["workflow"]) == (
        "I cannot tell how warm the kitchen is.",
        "answered",
        "kitchen",
    )
    assert last["events"] == lines[:2] and len(last["run_id"]) == 32
    # With --json as well it is the same: the events, then the one object.
    both = edge_agentd("ask", "How warm?", "--stream", "--json", "--endpoint", mock_daemon)
    objects = [json.loads(line) for line in both.stdout.splitlines()]
    assert [o.get("type") for o in objects[:-1]] == ["ValidationErrorObservation", "FinalAnswerAction"]
    assert objects[-1]["answer"] == "I cannot tell how warm the kitchen is."


def test_ask_exit_codes(mock_daemon: str, tmp_path: Path) -> None:
    no_answer = edge_agentd("ask", "How warm?", "--max-iterations", "1", "--endpoint", mock_daemon)
    assert no_answer.returncode == 1 and "max_iterations" in no_answer.stderr
    assert edge_agentd("ask", "  ", "--endpoint", mock_daemon).returncode == 65
    too_long = edge_agentd("ask", "x" * 51, "--json", "--endpoint", mock_daemon)
    assert too_long.returncode == 65
    assert json.loads(too_long.stdout)["error"]["code"] == "too_large"
    unknown = edge_agentd("ask", "hi", "--workflow", "garden", "--endpoint", mock_daemon)
    # The daemon names the workflows it has; it does not repeat what it was sent.
    assert unknown.returncode == 65 and "no such workflow (known: kitchen)" in unknown.stderr
    assert edge_agentd("ask", "hi", "--timeout", "banana").returncode == 65
    missing = edge_agentd("ask", "hi", "--endpoint", f"ipc://{tmp_path / 'none.sock'}")
    assert missing.returncode == 69 and "serve" in missing.stderr


def test_status_and_skills_commands(mock_daemon: str) -> None:
    status = edge_agentd("status", "--endpoint", mock_daemon)
    assert status.returncode == 0 and "state:     ready" in status.stdout
    as_json = json.loads(edge_agentd("status", "--json", "--endpoint", mock_daemon).stdout)
    assert as_json["workflows"] == ["kitchen"] and as_json["model"]["kind"] == "mock"
    skills = json.loads(edge_agentd("skills", "--json", "--endpoint", mock_daemon).stdout)
    assert isinstance(skills, list)
    for entry in skills:
        assert set(entry) == {
            "name",
            "description",
            "parameters",
            "source",
            "timeout_s",
            "signature",
        }
    plain = edge_agentd("skills", "--endpoint", mock_daemon).stdout
    for entry in skills:
        # Each line shows the call's shape and where the skill came from.
        assert f"{entry['name']}(" in plain and f"[{entry['source']}, timeout" in plain


def test_ask_times_out_with_75_and_busy_is_75_too(scripted_daemon: ScriptedDaemon) -> None:
    slow = [{"text": ANSWER, "delay_s": 30}]
    config = "[daemon]\nqueue_limit = 1\nshutdown_grace_s = 0.05\n"
    server, endpoint = scripted_daemon(slow, config=config)
    late = edge_agentd("ask", "hi", "--timeout", "0.5", "--json", "--endpoint", endpoint)
    assert late.returncode == 75, late.stderr
    assert json.loads(late.stdout)["events"][-1]["reason"] == "deadline"
    # The client gives up at its timeout; the daemon's interrupted run may end a moment later.
    wait_for(lambda: server.status()["running"] is None, 10)
    with Client(endpoint, timeout=5) as client:
        filler = threading.Thread(target=lambda: _swallow(client.run, "one", AskOptions(timeout=20)))
        filler.start()
        try:
            with Client(endpoint, timeout=5) as other:
                waiter = threading.Thread(target=lambda: _swallow(other.run, "two", AskOptions(timeout=20)))
                waiter.start()
                _wait_depth(server, 1)
                busy = edge_agentd("ask", "three", "--endpoint", endpoint)
                assert busy.returncode == 75 and "busy" in busy.stderr
                server.stop()
                waiter.join(10)
        finally:
            filler.join(10)


def _swallow(function: Any, *args: Any, **kwargs: Any) -> None:
    """Run a client call whose own outcome another assertion covers."""
    with contextlib.suppress(DaemonError):
        function(*args, **kwargs)


def _wait_depth(server: Any, depth: int) -> None:
    wait_for(lambda: server.status()["running"] and server.status()["queue_depth"] == depth, 10)


def test_client_streams_progress_and_raises_error_replies(scripted_daemon: ScriptedDaemon) -> None:
    _, endpoint = scripted_daemon([answer("I cannot tell: fine.")])
    with Client(endpoint, timeout=5) as client:
        seen: list[dict[str, Any]] = []
        result = client.run("how are you?", on_event=seen.append)
        assert result["answer"] == "I cannot tell: fine." and [e["type"] for e in seen] == ["FinalAnswerAction"]
        assert client.status()["state"] == "ready"
        with pytest.raises(DaemonError) as caught:
            client.run("hi", AskOptions(workflow="nope"))
        assert caught.value.code == "bad_request"


class ScriptedRouter:
    """A ROUTER that records what arrives and answers only the requests it is told to."""

    def __init__(self, context: zmq.Context[Any], answer_from: int) -> None:
        self.socket = context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self.answer_from = answer_from
        self.received: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not self.socket.poll(20):
                continue
            identity, payload = self.socket.recv_multipart()
            request = msgpack.unpackb(payload)
            self.received.append(request)
            if len(self.received) >= self.answer_from and request["op"] == "status":
                reply = {
                    "v": 1,
                    "id": request["id"],
                    "kind": "result",
                    "op": "status",
                    "state": "ready",
                }
                self.socket.send_multipart([identity, msgpack.packb(reply)])

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.socket.close(linger=0)


def test_lazy_pirate_retries_idempotent_ops_with_the_same_id_only() -> None:
    context: zmq.Context[Any] = zmq.Context()
    router = ScriptedRouter(context, answer_from=3)
    try:
        with Client(router.endpoint, timeout=0.2, retries=2, run_grace=0.1) as client:
            assert client.status()["state"] == "ready"
            ids = {r["id"] for r in router.received}
            assert len(router.received) == 3 and len(ids) == 1
            router.received.clear()
            with pytest.raises(Timeout):
                client.run("hi", AskOptions(timeout=0.2))
            wait_for(lambda: any(r["op"] == "cancel" for r in router.received), 5)
            runs = [r for r in router.received if r["op"] == "run"]
            cancels = [r for r in router.received if r["op"] == "cancel"]
            assert len(runs) == 1 and runs[0]["deadline_ms"] == 200
            assert [c["target"] for c in cancels] == [runs[0]["id"]]
        router.answer_from = 10**6
        with Client(router.endpoint, timeout=0.1, retries=1) as client, pytest.raises(Unavailable):
            client.skills()
    finally:
        router.close()
        context.destroy(linger=0)


def test_ctrl_c_on_ask_cancels_the_run_and_exits_130(scripted_daemon: ScriptedDaemon) -> None:
    slow = [{"text": ANSWER, "delay_s": 30}]
    server, endpoint = scripted_daemon(slow, config="[daemon]\nshutdown_grace_s = 0.05\n")
    asking = subprocess.Popen(
        [EDGE_AGENT, "ask", "hi", "--endpoint", endpoint],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: server.status()["running"] is not None, 20)
        asking.send_signal(signal.SIGINT)
        _, stderr = asking.communicate(timeout=20)
    finally:
        if asking.poll() is None:
            asking.kill()
            asking.communicate()
    assert asking.returncode == 130, stderr
    wait_for(lambda: server.status()["counters"]["runs_cancelled"] == 1, 10)
    wait_for(lambda: server.status()["running"] is None, 10)


@pytest.mark.parametrize(
    ("endpoint", "hint"),
    [
        ("http://localhost:5555", "tcp://localhost:5555"),
        ("localhost:5555", "tcp://localhost:5555"),
        ("/run/edge-agent/agent.sock", "ipc:///run/edge-agent/agent.sock"),
    ],
)
def test_a_malformed_endpoint_is_refused_at_once_with_65(endpoint: str, hint: str) -> None:
    for command in (["status"], ["ask", "hi", "--json"]):
        done = edge_agentd(*command, "--endpoint", endpoint, timeout=60)
        assert done.returncode == 65, done.stderr
        assert "ipc://PATH or tcp://HOST:PORT" in done.stderr and hint in done.stderr
    env_done = subprocess.run(
        [EDGE_AGENT, "status"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "EDGE_AGENT_ENDPOINT": endpoint},
    )
    assert env_done.returncode == 65 and hint in env_done.stderr, env_done.stderr


def test_a_connect_failure_closes_the_client_cleanly() -> None:
    # check_endpoint accepts a wildcard port (serve binds it), but nothing can connect to it:
    # before, the unclosed socket made close() wait in Context.term() for ever.
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            with Client("tcp://127.0.0.1:*", timeout=1) as client:
                client.status()
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the client hung"
    assert isinstance(outcome[0], BadEndpoint) and outcome[0].code == "bad_endpoint"
    with pytest.raises(BadEndpoint):
        Client("localhost:5555")


def test_the_watchdog_ends_a_stuck_command_with_75() -> None:
    stuck = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; from edge_agentd.cli.ask import watchdog; watchdog(0.2, True); "
            "time.sleep(120)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert stuck.returncode == 75, stuck.stderr
    assert json.loads(stuck.stdout)["error"]["code"] == "timeout"
    assert "did not finish within" in stuck.stderr


def test_status_timeout_bounds_both_tries() -> None:
    context: zmq.Context[Any] = zmq.Context()
    router = ScriptedRouter(context, answer_from=10**6)  # never answers
    try:
        done = edge_agentd("status", "--timeout", "1", "--endpoint", router.endpoint)
        assert done.returncode == 69 and "2 tries of 0.5 s" in done.stderr, done.stderr
    finally:
        router.close()
        context.destroy(linger=0)


def test_ctrl_c_with_json_prints_the_interrupted_object(scripted_daemon: ScriptedDaemon) -> None:
    slow = [{"text": ANSWER, "delay_s": 30}]
    server, endpoint = scripted_daemon(slow, config="[daemon]\nshutdown_grace_s = 0.05\n")
    asking = subprocess.Popen(
        [EDGE_AGENT, "ask", "hi", "--json", "--endpoint", endpoint],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: server.status()["running"] is not None, 20)
        asking.send_signal(signal.SIGINT)
        stdout, stderr = asking.communicate(timeout=20)
    finally:
        if asking.poll() is None:
            asking.kill()
            asking.communicate()
    assert asking.returncode == 130, stderr
    result = json.loads(stdout)
    assert (result["outcome"], result["answer"], result["query"]) == ("interrupted", None, "hi")
    assert result["events"][-1] == {"type": "InterruptedObservation", "reason": "cancelled"}
    # A guard, not a timing: the daemon lets the cancelled run go (a loaded machine is slow).
    wait_for(lambda: server.status()["running"] is None, 60)


def test_the_client_commands_import_neither_pydantic_nor_the_agent() -> None:
    # What `edge-agent ask/status/skills` load before they talk to the daemon; the start-up time
    # itself is measured by scripts/bench/bench_cli_start.py, not here.
    probe = (
        "import sys; from edge_agentd.cli import main as cli; cli._parser(); "
        "import edge_agentd.cli.ask, edge_agentd.client.zmqclient; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' "
        "or m.startswith(('edge_agentd.agent', 'edge_agentd.service', 'edge_agentd.protocol.wire', "
        "'edge_agentd.model', 'edge_agentd.client.mqttclient', 'edge_agentd.protocol.mqttwire'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr
    # The framework's names are still there, loaded when first used.
    from edge_agentd import Agent, MockModel

    assert Agent.__module__ == "edge_agentd.agent.loop" and MockModel([]).__class__ is MockModel
    from edge_agentd.cli import mqttargs
    from edge_agentd.protocol import mqttwire

    assert mqttargs.DEFAULT_PREFIX == mqttwire.DEFAULT_PREFIX


def test_status_during_another_clients_run_says_a_run_is_going(
    scripted_daemon: ScriptedDaemon,
) -> None:
    server, endpoint = scripted_daemon([{"text": ANSWER, "delay_s": 30}], config=QUICK_STOP)
    context: zmq.Context[Any] = zmq.Context()
    asker = context.socket(zmq.DEALER)
    asker.setsockopt(zmq.LINGER, 0)
    try:
        asker.connect(endpoint)
        asker.send(msgpack.packb({"v": 1, "id": "theirs", "op": "run", "query": "hi"}))
        wait_for(lambda: server.status()["running"] is not None, 20)
        shown = edge_agentd("status", "--endpoint", endpoint)
        assert shown.returncode == 0, shown.stderr
        assert "state:     busy" in shown.stdout
        assert "(running: a zmq run, step 1 of 12, " in shown.stdout, shown.stdout
        assert "theirs" not in shown.stdout and "nothing" not in shown.stdout
        as_json = json.loads(edge_agentd("status", "--json", "--endpoint", endpoint).stdout)
        assert as_json["running"]["source"] == "zmq" and as_json["running"]["id"] is None
    finally:
        asker.close()
        context.destroy(linger=0)


def test_wait_shorter_than_the_timeout_leaves_a_keyed_run_going_and_cancels_an_unkeyed_one(
    scripted_daemon: ScriptedDaemon,
) -> None:
    slow = [{"text": ANSWER, "delay_s": 3}] * 2
    server, endpoint = scripted_daemon(slow, config=QUICK_STOP)
    keyed = ["ask", "hi", "--key", "k1", "--timeout", "30", "--json", "--endpoint", endpoint]
    stopped = edge_agentd(*keyed, "--wait", "0.5")
    assert stopped.returncode == 75, stopped.stderr
    assert json.loads(stopped.stdout)["error"]["code"] == "timeout"
    assert "ask again with the same --key" in stopped.stderr
    # The run went on; the same key waits for it instead of running the model again.
    done = edge_agentd(*keyed, "--wait", "20")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == json.loads(ANSWER)["final_answer"]
    assert server.status()["counters"]["runs_accepted"] == 1
    # Without a key nobody can come back for it: the run is cancelled when the wait ends.
    unkeyed = edge_agentd("ask", "hi", "--timeout", "30", "--wait", "0.5", "--endpoint", endpoint)
    assert unkeyed.returncode == 75, unkeyed.stderr
    wait_for(lambda: server.status()["counters"]["runs_cancelled"] == 1, 10)
    refused = edge_agentd("ask", "hi", "--wait", "1", "--mqtt", "127.0.0.1:1")
    assert refused.returncode == 65 and "--wait works over ZeroMQ only" in refused.stderr
