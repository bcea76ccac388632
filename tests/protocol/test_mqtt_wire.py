"""parse_ask against hostile payloads: every payload is an Ask or an AskError with one of the
protocol's stable codes, never another exception (docs/mqtt.md, *Errors*). parse_ask reads only
the envelope; the run's fields are the daemon's to judge (tests/service/test_mqtt_hostile.py drives the
whole bridge)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd.protocol.mqttwire import MQTT_FIELDS, OPS, Ask, AskError, parse_ask

CODES = {"bad_request", "too_large"}
RUN_FIELDS = {"query", "workflow", "max_iterations", "deadline_ms", "stream", "target"}
KEYS = sorted(MQTT_FIELDS | RUN_FIELDS | {"colour"})
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
VALUES = JSON_VALUES | st.sampled_from(["run", "cancel", "reply/topic", "a/+/b", "$SYS/x", 1])


def parse(payload: bytes, response_topic: str | None = None) -> Ask | AskError:
    try:
        return parse_ask(
            payload, response_topic=response_topic, max_bytes=2048, hard_max_bytes=8192
        )
    except AskError as exc:
        return exc


@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=300), response_topic=st.none() | st.text(max_size=30))
def test_any_bytes_are_an_ask_or_a_stable_error(payload: bytes, response_topic: str | None) -> None:
    outcome = parse(payload, response_topic)
    if isinstance(outcome, AskError):
        assert outcome.code in CODES
        assert outcome.reply_to is None or "+" not in outcome.reply_to
        assert len(outcome.message) <= 300


@settings(max_examples=400, deadline=None)
@given(
    fields=st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6),
    response_topic=st.none() | st.sampled_from(["r/v5", "r/+", ""]),
)
def test_any_object_is_an_ask_or_a_stable_error(
    fields: dict[str, Any], response_topic: str | None
) -> None:
    outcome = parse(json.dumps(fields).encode(), response_topic)
    if isinstance(outcome, AskError):
        assert outcome.code in CODES
        return
    # A parsed ask is answerable, and carries every field but the envelope's for the daemon.
    assert outcome.reply_to in ("r/v5", fields.get("reply_to"))
    assert outcome.op in OPS
    assert outcome.fields == {k: v for k, v in fields.items() if k not in MQTT_FIELDS or k == "v"}
    if outcome.op == "cancel":
        assert outcome.fields["target"] == fields["target"]


@settings(max_examples=200, deadline=None)
@given(
    depth=st.integers(min_value=1, max_value=50_000),
    surrogate=st.sampled_from([r"\ud800", r"\udfff", "ok"]),
)
def test_deep_nesting_and_lone_surrogates_are_stable_errors(depth: int, surrogate: str) -> None:
    nested = parse(("[" * depth + "]" * depth).encode(), "r/v5")
    assert isinstance(nested, AskError) and nested.code in CODES
    # A lone surrogate can be written in JSON, but not in a reply: such an id is refused.
    ask = parse(f'{{"query": "q", "reply_to": "r/1", "id": "{surrogate}"}}'.encode())
    if surrogate == "ok":
        assert isinstance(ask, Ask) and ask.request_id == "ok"
    else:
        assert isinstance(ask, AskError) and ask.code == "bad_request"
        assert ask.request_id is None and ask.reply_to == "r/1"
    topic = parse(f'{{"query": "q", "reply_to": "r/{surrogate}"}}'.encode())
    assert isinstance(topic, Ask) == (surrogate == "ok")


def test_a_cancel_names_its_target_and_takes_no_run_fields() -> None:
    ask = parse(b'{"op": "cancel", "target": "n42", "reply_to": "r/1", "id": "c1"}')
    assert isinstance(ask, Ask)
    assert (ask.op, ask.fields, ask.reply_to, ask.request_id) == (
        "cancel",
        {"target": "n42"},
        "r/1",
        "c1",
    )
    for payload in (
        b'{"op": "cancel", "reply_to": "r/1"}',
        b'{"op": "cancel", "target": true, "reply_to": "r/1"}',
        b'{"op": "status", "reply_to": "r/1"}',
    ):
        error = parse(payload)
        assert isinstance(error, AskError) and error.code == "bad_request", payload
        assert error.reply_to == "r/1"  # answered, not dropped
    run = parse(b'{"query": "q", "op": "run", "reply_to": "r/1"}')
    assert isinstance(run, Ask) and run.op == "run" and run.fields == {"query": "q"}
    # A cancel's other fields go to the daemon, which refuses them as it refuses any (the
    # bridge's test sees that reply: tests/service/test_mqtt.py, "run-field").
    extra = parse(b'{"op": "cancel", "target": "n42", "query": "q", "reply_to": "r/1"}')
    assert isinstance(extra, Ask) and extra.fields == {"target": "n42", "query": "q"}


def test_the_cli_options_default_to_the_wire_prefixes() -> None:
    from edge_agentd.cli import mqttargs
    from edge_agentd.protocol import mqttwire

    assert mqttargs.DEFAULT_DISCOVERY_PREFIX == mqttwire.DEFAULT_DISCOVERY_PREFIX
