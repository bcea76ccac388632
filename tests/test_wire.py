"""Protocol v1 framing: bounded decoding, checked fields, stable error codes; and the config file."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agent.service.config import ConfigError, parse_settings
from edge_agent.wire import (
    ERROR_CODES,
    CancelRequest,
    RunRequest,
    StatusRequest,
    WireError,
    decode_reply,
    decode_request,
    encode,
    error_reply,
)

LIMITS = {"max_bytes": 4096, "max_query_chars": 100}


def packed(**fields: object) -> bytes:
    return msgpack.packb({"v": 1, "id": "r1", **fields})


def error_of(frame: bytes) -> WireError:
    with pytest.raises(WireError) as caught:
        decode_request(frame, **LIMITS)
    return caught.value


def test_valid_requests_decode_to_their_op() -> None:
    run = decode_request(
        packed(op="run", query="hi", max_iterations=4, deadline_ms=1500, stream=True), **LIMITS
    )
    assert isinstance(run, RunRequest)
    assert (run.query, run.max_iterations, run.deadline_ms, run.stream) == ("hi", 4, 1500.0, True)
    assert isinstance(decode_request(packed(op="status"), **LIMITS), StatusRequest)
    cancel = decode_request(packed(op="cancel", target="r0"), **LIMITS)
    assert isinstance(cancel, CancelRequest) and cancel.target == "r0"


@pytest.mark.parametrize(
    ("frame", "code", "request_id", "words"),
    [
        (b"", "bad_request", None, "msgpack"),
        (b"\x92\x01\x02", "bad_request", None, "map"),
        (msgpack.packb({"v": 1, "id": "r1", "op": "status"}) + b"\x00", "bad_request", None, "follow"),
        (msgpack.packb({1: 1}), "bad_request", None, "map key"),
        (msgpack.packb({b"v": 1, "id": "r1"}), "bad_request", "r1", "string"),
        (msgpack.packb({"id": "r1", "op": "status"}), "bad_request", "r1", "'v'"),
        (packed(v=2, op="status"), "unsupported_version", "r1", "v1"),
        (packed(op="launch"), "bad_request", "r1", "op must be"),
        (packed(op="run"), "bad_request", "r1", "query"),
        (packed(op="run", query=""), "bad_request", "r1", "query"),
        (packed(op="run", query="q", max_iterations="3"), "bad_request", "r1", "max_iterations"),
        (packed(op="run", query="q", max_iterations=0), "bad_request", "r1", "max_iterations"),
        (packed(op="run", query="q", deadline_ms=-1), "bad_request", "r1", "deadline_ms"),
        (packed(op="run", query="q", stream=1), "bad_request", "r1", "stream"),
        (packed(op="status", extra=1), "bad_request", "r1", "extra"),
        (packed(op="cancel"), "bad_request", "r1", "target"),
        (packed(op="run", query="q" * 101), "too_large", "r1", "100"),
        (b"\x00" * 5000, "too_large", None, "4096"),
        (msgpack.packb({"v": 1, "id": "x" * 200, "op": "status"}), "bad_request", None, "id"),
        (b"\xdf\xff\xff\xff\xff", "bad_request", None, "max_map_len"),
        (b"\x91" * 3000, "bad_request", None, "msgpack"),
    ],
)
def test_each_bad_request_has_a_stable_code(frame, code, request_id, words) -> None:
    error = error_of(frame)
    assert (error.code, error.request_id) == (code, request_id)
    assert words in error.message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_decoding_arbitrary_bytes_raises_only_wire_errors(frame: bytes) -> None:
    try:
        decode_request(frame, **LIMITS)
    except WireError as exc:
        assert exc.code in ERROR_CODES


def test_replies_round_trip() -> None:
    reply = decode_reply(encode(error_reply(None, "busy", "full")))
    assert reply == {"v": 1, "id": None, "kind": "error", "code": "busy", "message": "full"}
    with pytest.raises(WireError):
        decode_reply(msgpack.packb({"kind": "surprise"}))


def test_config_errors_name_the_key_and_the_line() -> None:
    text = (
        "# edge-agent\n"
        "[daemon]\n"
        "queue_limit = 8\n"
        "max_iterations = 'twelve'\n"
        "\n"
        "[workflows.morning]\n"
        "instructions = 'Say hello.'\n"
        "max_iterations = 0\n"
        "[skills.timeouts]\n"
        "cpu_temperature = -1\n"
    )
    with pytest.raises(ConfigError) as caught:
        parse_settings(text, "edge.toml")
    message = str(caught.value)
    assert "edge.toml: line 4: daemon.max_iterations:" in message
    assert "edge.toml: line 8: workflows.morning.max_iterations:" in message
    assert "edge.toml: line 10: skills.timeouts.cpu_temperature:" in message


def test_config_rejects_unknown_keys_and_bad_toml() -> None:
    with pytest.raises(ConfigError, match=r"line 3: model.gguf: Extra inputs"):
        parse_settings("[model]\npath = 'default'\ngguf = 'x'\n")
    with pytest.raises(ConfigError, match=r"not valid TOML.*line 1"):
        parse_settings("[daemon\n")
    with pytest.raises(ConfigError, match="max_iterations_cap"):
        parse_settings("[daemon]\nmax_iterations = 40\n")


def test_config_defaults_and_workflows() -> None:
    settings_ = parse_settings(
        "[soul]\nname = 'Pi'\n[workflows.sums]\ninstructions = 'Add.'\nskills = ['add']\n"
    )
    assert settings_.daemon.max_iterations == 12 and settings_.daemon.queue_limit == 8
    assert settings_.daemon.allow_remote is False and settings_.model.path == "default"
    assert settings_.make_soul().name == "Pi"
    workflow = settings_.make_workflows()["sums"]
    assert workflow.skills == ("add",) and workflow.instructions == "Add."
    problem = settings_.problem(("workflows", "sums", "skills"), "no skill 'add'")
    assert str(problem) == "<config>: line 5: workflows.sums.skills: no skill 'add'"
