"""What ``edge-agent`` says to a person: sentences that name the limit hit and what became of the
run, the wire code only where a script reads it (``--json``, the exit code), and the command's
own usage for a mistyped option. Against real daemons, or a real ROUTER that never answers."""

from __future__ import annotations

import json
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
from daemon_harness import answer, wait_for, write_mock

DaemonProcess = Callable[..., AbstractContextManager[str]]  # conftest.py
EDGE_AGENT = str(Path(sys.executable).with_name("edge-agent"))
WIRE_CODES = ("too_large", "unavailable", "bad_endpoint", "timeout", "bad_request", "busy")


def edge_agentd(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EDGE_AGENT, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def opens_with_a_code(stderr: str) -> list[str]:
    """The lines that open a sentence with a wire code (``edge-agent: too_large: ...``)."""
    return [
        line
        for line in stderr.splitlines()
        if any(line.startswith(f"edge-agent: {code}") for code in WIRE_CODES)
    ]


class SilentRouter:
    """A real ROUTER that answers ``status`` (ready) and nothing else: a run never ends."""

    def __init__(self, context: zmq.Context[Any]) -> None:
        self.socket = context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
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
            if request["op"] == "status":
                reply = {"v": 1, "id": request["id"], "kind": "result", "op": "status"}
                self.socket.send_multipart([identity, msgpack.packb({**reply, "state": "ready"})])

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.socket.close(linger=0)


@pytest.fixture
def silent() -> Iterator[SilentRouter]:
    context: zmq.Context[Any] = zmq.Context()
    router = SilentRouter(context)
    try:
        yield router
    finally:
        router.close()
        context.destroy(linger=0)


def test_a_timed_out_ask_without_a_key_says_its_run_was_cancelled(silent: SilentRouter) -> None:
    done = edge_agentd("ask", "hi", "--timeout", "1", "--endpoint", silent.endpoint)
    assert done.returncode == 75, done.stderr
    # It says the --timeout the user gave (and the grace after it), that the run was cancelled,
    # and never offers `edge-agent result`, which would say `interrupted: cancelled`.
    assert "--timeout 1 s" in done.stderr and "the run was cancelled" in done.stderr, done.stderr
    assert "fetch" not in done.stderr and "edge-agent result" not in done.stderr
    assert not opens_with_a_code(done.stderr)
    wait_for(lambda: any(r["op"] == "cancel" for r in silent.received), 10)


def test_a_timed_out_ask_with_a_key_says_its_run_goes_on(silent: SilentRouter) -> None:
    done = edge_agentd(
        "ask", "hi", "--timeout", "30", "--wait", "1", "--key", "k1", "--json",
        "--endpoint", silent.endpoint,
    )  # fmt: skip
    assert done.returncode == 75, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    assert json.loads(done.stdout)["error"]["code"] == "timeout"  # the code, for scripts
    assert "--wait 1 s" in done.stderr and f"`edge-agent result {run_id}`" in done.stderr
    assert "ask again with the same --key" in done.stderr and "cancelled" not in done.stderr
    assert not any(r["op"] == "cancel" for r in silent.received)


def test_no_message_opens_with_a_wire_code(tmp_path: Path) -> None:
    missing = edge_agentd("ask", "hi", "--endpoint", f"ipc://{tmp_path / 'none.sock'}")
    assert missing.returncode == 69
    assert missing.stderr.startswith("edge-agent: no daemon socket at "), missing.stderr
    malformed = edge_agentd("status", "--endpoint", "localhost:5555")
    assert malformed.returncode == 65 and not opens_with_a_code(malformed.stderr)
    assert "ipc://PATH or tcp://HOST:PORT" in malformed.stderr
    for command in (["runs"], ["result", "r1"], ["triggers"]):
        gone = edge_agentd(*command, "--endpoint", f"ipc://{tmp_path / 'none.sock'}")
        assert gone.returncode == 69 and not opens_with_a_code(gone.stderr), gone.stderr


def test_a_long_question_is_told_the_questions_own_limit(
    tmp_path: Path, daemon_process: DaemonProcess
) -> None:
    mock = write_mock(tmp_path / "mock.json", [answer("I cannot tell.")])
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    with daemon_process(["--model", f"mock:{mock}"], endpoint):
        # 100 KB: over the request's 64 KiB, so the frame is refused before it is read.
        huge = edge_agentd("ask", "x" * 100_000, "--endpoint", endpoint)
        over = edge_agentd("ask", "x" * 5000, "--json", "--endpoint", endpoint)
    assert huge.returncode == 65
    assert "a question may be at most 4000 characters" in huge.stderr, huge.stderr
    assert not opens_with_a_code(huge.stderr)
    assert over.returncode == 65 and json.loads(over.stdout)["error"]["code"] == "too_large"
    assert "the question is 5000 characters, over the daemon's limit of 4000" in over.stderr


def test_a_mistyped_option_gets_the_commands_usage_and_the_closest_option() -> None:
    done = edge_agentd("ask", "--jsn", "How hot is the CPU?")
    assert done.returncode == 65
    assert done.stderr.startswith("usage: edge-agent ask "), done.stderr
    assert "unrecognized arguments: --jsn (did you mean --json?)" in done.stderr
    runs = edge_agentd("runs", "--limt", "3")
    assert runs.returncode == 65 and "usage: edge-agent runs " in runs.stderr
    assert "did you mean --limit?" in runs.stderr


def test_the_top_level_help_is_plain_text() -> None:
    done = edge_agentd("--help")
    assert done.returncode == 0
    assert "``" not in done.stdout, done.stdout
    assert "edge-agent: serve the daemon, or ask it something from a shell." in done.stdout


def test_status_shows_no_empty_workflows_list(
    tmp_path: Path, daemon_process: DaemonProcess
) -> None:
    mock = write_mock(tmp_path / "mock.json", [answer("I cannot tell.")])
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    with daemon_process(["--model", f"mock:{mock}"], endpoint):
        shown = edge_agentd("status", "--endpoint", endpoint)
    assert shown.returncode == 0, shown.stderr
    (skills,) = [line for line in shown.stdout.splitlines() if line.startswith("skills:")]
    assert "workflows" not in skills, shown.stdout
