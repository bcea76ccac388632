"""Protocol v1 framing: bounded decoding, checked fields, stable error codes, docs/protocol.md held
to the protocol table; and the config file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from edge_agentd.agent.events import (
    EVENT_TYPES,
    STATE_ADAPTER,
    AgentState,
    InterruptedObservation,
    Outcome,
    Usage,
)
from edge_agentd.protocol.framing import FrameError, decode_reply
from edge_agentd.protocol.wire import (
    ERROR_CODES,
    OPS,
    PROTOCOL,
    REPLY_KINDS,
    CancelledRun,
    CancelRequest,
    Counters,
    DaemonState,
    ErrorReply,
    Request,
    RunningRun,
    RunOutcome,
    RunRequest,
    RunResult,
    SkillEntry,
    SkillProblem,
    SkillsResult,
    StatusRequest,
    Timing,
    WireError,
    decode_request,
    encode,
)
from edge_agentd.service.config.settings import ConfigError, parse_settings

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
    assert run.source == "zmq"  # unless the client (the MQTT bridge) says otherwise
    bridged = decode_request(packed(op="run", query="hi", source="mqtt"), **LIMITS)
    assert isinstance(bridged, RunRequest) and bridged.source == "mqtt"
    assert isinstance(decode_request(packed(op="status"), **LIMITS), StatusRequest)
    cancel = decode_request(packed(op="cancel", target="r0"), **LIMITS)
    assert isinstance(cancel, CancelRequest) and cancel.target == "r0"


@pytest.mark.parametrize(
    ("frame", "code", "request_id", "words"),
    [
        (b"", "bad_request", None, "msgpack"),
        (b"\x92\x01\x02", "bad_request", None, "map"),
        (
            msgpack.packb({"v": 1, "id": "r1", "op": "status"}) + b"\x00",
            "bad_request",
            None,
            "follow",
        ),
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
        (packed(op="run", query="q", source="trigger:x"), "bad_request", "r1", "source"),
        (packed(op="run", query="q", source=None), "bad_request", "r1", "source"),
        (packed(op="status", source="mqtt"), "bad_request", "r1", "does not take"),
        (packed(op="status", extra=1), "bad_request", "r1", "does not take"),
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
    reply = decode_reply(encode(ErrorReply(id=None, code="busy", message="full")))
    assert reply == {"v": 1, "id": None, "kind": "error", "code": "busy", "message": "full"}
    with pytest.raises(FrameError):
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
    with pytest.raises(
        ConfigError, match=r"line 3: unknown key `gguf` in \[model\] \(known keys: "
    ):
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


# -- docs/protocol.md against the protocol table ------------------------------------------------

DOC = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text(encoding="utf-8")
ENVELOPE = {"v", "id", "kind"}


def section(heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = heading.split(" ", maxsplit=1)[0]
    start = DOC.index(f"\n{heading}\n")
    ends = [DOC.find(f"\n{'#' * n} ", start + len(heading) + 2) for n in range(1, len(level) + 1)]
    return DOC[start : min([e for e in ends if e != -1], default=len(DOC))]


def table(text: str, nth: int = 0) -> dict[str, str]:
    """The nth table in ``text``: its first column's backticked name -> the rest of the row."""
    tables: list[dict[str, str]] = []
    rows: dict[str, str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            rows = None
            continue
        if rows is None:
            rows = {}
            tables.append(rows)
        match = re.match(r"\|\s*`([^`]+)`\s*\|(.*)", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return tables[nth]


def named(text: str) -> set[str]:
    """Every name written as code in ``text``, ``{source, error}`` giving two."""
    return {word for code in re.findall(r"`([^`]+)`", text) for word in re.findall(r"\w+", code)}


def fields(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields) - ENVELOPE


def test_the_requests_table_is_every_field_of_every_request_and_its_ops() -> None:
    rows = table(section("## Requests"))
    requests = {op: exchange.request for op, exchange in PROTOCOL.items()}
    assert set(rows) == {name for model in requests.values() for name in model.model_fields}
    for name, row in rows.items():
        ops = {op for op, model in requests.items() if name in model.model_fields}
        said = set(re.findall(r"\w+", row.split("|")[1]))
        assert said == ({"all"} if ops == set(OPS) else ops), name
    assert named(rows["op"]) == set(OPS)
    assert tuple(get_args(Request)) == tuple(requests.values())


def test_the_replies_tables_are_every_reply_of_every_op() -> None:
    text = section("## Replies")
    kinds = table(text)
    assert tuple(kinds) == REPLY_KINDS
    for reply in {reply for exchange in PROTOCOL.values() for reply in exchange.replies}:
        kind = reply.model_fields["kind"].default
        other = {"op"} if kind == "result" else fields(reply)
        assert named(kinds[kind].split("|")[1]) >= other, kind
    order = table(text, 1)
    assert set(order) == set(OPS)
    for op, exchange in PROTOCOL.items():
        said = [k for k in re.findall(r"`([a-z]+)`", order[op]) if k in REPLY_KINDS]
        assert said == [reply.model_fields["kind"].default for reply in exchange.replies], op
    assert named(text.split("\n\n")[1]) >= ENVELOPE


@pytest.mark.parametrize("op", OPS)
def test_each_ops_result_table_is_its_fields(op: str) -> None:
    result = PROTOCOL[op].replies[-2]
    rows = table(section(f"### `{op}`"))
    assert set(rows) == fields(result), op
    assert f'`"{op}"`' in rows["op"]


def test_the_nested_maps_of_results_are_documented() -> None:
    status = section("### `status`")
    assert set(table(status, 1)) == set(RunningRun.model_fields)
    assert named(table(status)["running"]) == set(RunningRun.model_fields)
    assert set(table(status, 2)) == set(Counters.model_fields)
    assert named(table(status)["skill_problems"]) >= set(SkillProblem.model_fields)
    assert named(table(status)["state"]) == set(get_args(DaemonState))
    assert set(table(section("### `skills`"), 1)) == set(SkillEntry.model_fields)
    run = table(section("### `run`"))
    assert named(run["timing"]) >= set(Timing.model_fields)
    assert named(run["outcome"]) == set(get_args(RunOutcome))
    assert named(run["state"]) >= {"query", "events"}
    assert named(table(section("### `cancel`"))["was"]) == set(get_args(CancelledRun))


def test_the_events_table_is_every_event_and_its_fields() -> None:
    text = section("### Events")
    rows = table(text)
    assert list(rows) == [event.__name__ for event in EVENT_TYPES]
    for event in EVENT_TYPES:
        assert named(rows[event.__name__]) >= set(event.model_fields) - {"type"}, event.__name__
    assert named(text.split("`usage` is nil or a map:")[1]) >= set(Usage.model_fields)


def test_the_error_codes_table_is_every_code() -> None:
    assert tuple(table(section("## Error codes"))) == ERROR_CODES


def test_the_wire_and_the_agent_agree_on_outcomes_and_events() -> None:
    assert set(get_args(RunOutcome)) == set(get_args(Outcome))
    state = AgentState(query="q")
    state.stream.append(InterruptedObservation(reason="cancelled"))
    assert STATE_ADAPTER.dump_python(state, mode="json") == {
        "query": "q",
        "events": [{"type": "InterruptedObservation", "reason": "cancelled"}],
    }
    assert STATE_ADAPTER.validate_python(STATE_ADAPTER.dump_python(state, mode="json")) == state


def test_encode_packs_a_reply_exactly_as_its_model_dump() -> None:
    replies = [
        ErrorReply(id=None, code="busy", message="full"),
        RunResult(
            id="r",
            workflow=None,
            timing=Timing(queued_ms=0.5, run_ms=1),
            outcome="answered",
            answer="5",
            state={"query": "q", "events": [{"type": "FinalAnswerAction", "answer": "5"}]},
        ),
        SkillsResult(
            id="s",
            skills=[
                SkillEntry(
                    name="add",
                    description="Add.",
                    parameters={"type": "object"},
                    source="tests",
                    timeout_s=None,
                    signature="add()",
                )
            ],
        ),
    ]
    for reply in replies:
        assert encode(reply) == msgpack.packb(reply.model_dump(), use_bin_type=True)
        assert decode_reply(encode(reply)) == reply.model_dump()


def test_unknown_config_keys_name_the_section_and_the_likely_key() -> None:
    text = (
        "[daemon]\n"
        "queue_limt = 4\n"
        "[workflows.morning]\n"
        "instrctions = 'Say hello.'\n"
        "[deamon]\n"
        "x = 1\n"
    )
    with pytest.raises(ConfigError) as caught:
        parse_settings(text, "edge.toml")
    message = str(caught.value)
    assert (
        "edge.toml: line 2: unknown key `queue_limt` in [daemon] (did you mean `queue_limit`?)"
        in message
    )
    assert (
        "edge.toml: line 4: unknown key `instrctions` in [workflows.morning] "
        "(did you mean `instructions`?)" in message
    )
    assert "edge.toml: line 5: unknown key `deamon` at the top level (did you mean `daemon`?)" in (
        message
    )
    assert "Extra inputs" not in message
    with pytest.raises(ConfigError, match=r"unknown key `hots` in \[mqtt\] \(did you mean `host`"):
        parse_settings("[mqtt]\nhots = 'localhost'\n")


def test_the_clients_framing_agrees_with_the_wire_models() -> None:
    from edge_agentd.protocol import framing, wire

    assert framing.REPLY_KINDS == wire.TABLE_REPLY_KINDS
    assert set(wire.OPS) >= framing.IDEMPOTENT_OPS
    verdicts = {
        wire.encode({"v": 1, "id": "a", "kind": "result", "op": "status"}): "ok",
        wire.encode({"v": 1, "kind": "nonsense"}): "bad_request",
        wire.encode([1, 2]): "bad_request",
        b"\xc1": "bad_request",
        wire.encode({"kind": "error"}) + b"\x00": "bad_request",
        msgpack.packb({1: "x"}): "bad_request",
    }
    for frame, expected in verdicts.items():
        try:
            framing.decode_reply(frame)
            got = "ok"
        except framing.FrameError as exc:
            got = exc.code
        assert got == expected, frame
    with pytest.raises(framing.FrameError) as info:
        framing.decode_reply(b"\x80" * 10, max_bytes=4)
    assert info.value.code == "too_large"
    request = {"v": 1, "id": "r", "op": "run", "query": "hi", "stream": True}
    assert framing.encode_request(request) == wire.encode(request)
