"""llama.cpp's log in the daemon's: a start of the embedded model says nothing of its known-harmless
"control-looking token" warning, while a real load error reaches the log as an error, and the
failed load says why."""

from __future__ import annotations

import itertools
import logging
import signal
import subprocess
from pathlib import Path

import pytest
from daemon_harness import start_daemon, stop_daemon, wait_ready
from hypothesis import given, settings
from hypothesis import strategies as st
from test_model_gguf import tiny_gguf

from edge_agentd.model.embedded import default_model_path
from edge_agentd.model.llamalog import (
    GGML_CONT,
    GGML_DEBUG,
    GGML_ERROR,
    GGML_INFO,
    GGML_WARN,
    LlamaLog,
)
from scripts.testbed.serve_command import edge_agent_command

CONTROL_LOOKING = "control-looking token"


def _embedded_model_or_skip() -> None:
    try:
        default_model_path()
    except Exception as exc:
        pytest.skip(f"the embedded model is not installed: {exc}")


def _start_and_stop(directory: Path, log_level: str) -> tuple[int, str]:
    """``edge-agent serve --model default`` until ready, then SIGTERM: its exit code and log."""
    directory.mkdir()
    endpoint = f"ipc://{directory / 'agent.sock'}"
    log = directory / "daemon.log"
    with log.open("wb") as out:  # a file, not a pipe: at debug llama.cpp says ~100 KB
        daemon = subprocess.Popen(
            edge_agent_command(
                "serve", "--model", "default", "--endpoint", endpoint, "--log-level", log_level
            ),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_ready(endpoint, daemon, timeout=240)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
    return daemon.returncode, log.read_text(errors="replace")


def test_a_start_of_the_embedded_model_logs_no_known_harmless_warning(tmp_path: Path) -> None:
    _embedded_model_or_skip()
    code, output = _start_and_stop(tmp_path / "info", "INFO")
    assert code == 0, output
    assert "ready" in output, output
    assert CONTROL_LOOKING not in output, output
    assert "probably a bug in the model" not in output, output
    # llama.cpp's chatter (its metadata dump) is debug, not the service's log.
    assert "llama_model_loader" not in output, output
    code, debug_output = _start_and_stop(tmp_path / "debug", "DEBUG")
    assert code == 0, debug_output
    # Still there for whoever asks for debug, named as llama.cpp's.
    assert f"DEBUG edge_agentd.model.llama_cpp: load: {CONTROL_LOOKING}" in debug_output


def test_a_real_load_error_from_llama_cpp_is_still_logged(tmp_path: Path) -> None:
    # A gemma3 header llama.cpp itself refuses (no context length), past our own checks.
    model = tmp_path / "broken.gguf"
    model.write_bytes(tiny_gguf("gemma3"))
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    daemon = start_daemon(["--model", str(model), "--endpoint", endpoint])
    try:
        daemon.wait(120)  # the load fails and the daemon exits by itself
    finally:
        output = stop_daemon(daemon)
    assert daemon.returncode == 78, output
    assert (
        "ERROR edge_agentd.model.llama_cpp: llama_model_load: error loading model: "
        "error loading model hyperparameters: key not found in model: gemma3.context_length"
    ) in output, output
    # The daemon's own line says why too, not only that llama.cpp could not load the file.
    assert "could not load" in output and "key not found in model" in output.split("could not load")[1]


def test_warnings_other_than_the_known_harmless_ones_stay_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    llama_log = LlamaLog()
    with caplog.at_level(logging.DEBUG, logger="edge_agentd.model.llama_cpp"):
        llama_log.write(GGML_WARN, "load: control-looking token:    212 '</s>' was not control-type;"
                        " this is probably a bug in the model. its type will be overridden\n")
        llama_log.write(GGML_WARN, "llama_context: n_ctx_per_seq (512) < n_ctx_train (32768)\n")
        llama_log.write(GGML_WARN, "load: control token is not marked as EOG\n")
        llama_log.write(GGML_INFO, "llama_model_loader: - kv   0: general.architecture\n")
        llama_log.write(GGML_ERROR, "llama_model_load: error loading model: bad\n")
    levels = [(record.levelno, record.getMessage()[:24]) for record in caplog.records]
    assert levels == [
        (logging.DEBUG, "load: control-looking to"),
        (logging.WARNING, "llama_context: n_ctx_per"),
        (logging.WARNING, "load: control token is n"),
        (logging.DEBUG, "llama_model_loader: - kv"),
        (logging.ERROR, "llama_model_load: error "),
    ]
    assert llama_log.first_error == "llama_model_load: error loading model: bad"


@settings(max_examples=100, deadline=None)
@given(
    messages=st.lists(
        st.tuples(
            st.sampled_from([GGML_DEBUG, GGML_INFO, GGML_WARN, GGML_ERROR]),
            st.lists(st.text(st.characters(blacklist_characters="\n\r"), min_size=1), min_size=1),
        ),
        max_size=6,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=40), max_size=4),
)
def test_lines_written_in_pieces_are_logged_whole_at_their_messages_level(
    messages: list[tuple[int, list[str]]], cuts: list[int]
) -> None:
    seen: list[tuple[int, str]] = []
    handler = _Collect(seen)
    logger = logging.getLogger("edge_agentd.model.llama_cpp")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        llama_log = LlamaLog()
        expected: list[tuple[int, str]] = []
        for level, lines in messages:
            text = "".join(line + "\n" for line in lines)
            # The first piece carries the level; the rest come as continuations.
            pieces = _split(text, cuts) or [text]
            llama_log.write(level, pieces[0])
            for piece in pieces[1:]:
                llama_log.write(GGML_CONT, piece)
            python_level = {GGML_ERROR: logging.ERROR, GGML_WARN: logging.WARNING}
            expected += [
                (python_level.get(level, logging.DEBUG), line.rstrip())
                for line in lines
                if line.rstrip()
            ]
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    assert seen == expected


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(cut, len(text)) for cut in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if text[a:b]]


class _Collect(logging.Handler):
    def __init__(self, seen: list[tuple[int, str]]) -> None:
        super().__init__(logging.DEBUG)
        self.seen = seen

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.levelno, record.getMessage()))
