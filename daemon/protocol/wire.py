"""Protocol v1 on the wire: one msgpack map per frame, both directions typed by pydantic models.

:data:`PROTOCOL` is the whole protocol in one table: for each ``op``, the request model a client
sends and the reply models it may get back. Everything a peer sends goes through
:func:`decode_request`, which either returns a validated request or raises :class:`WireError`
carrying the stable error code of the reply. Replies are built as the models below and packed by
:func:`encode`. ``docs/protocol.md`` is the prose version; a test holds it to this table.

It imports only its own layer (`protocol/`: framing and the other wire modules): it is shared by
the daemon and its clients.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, get_args

import msgpack
from pydantic import Field, ValidationError

from edge_agentd.protocol import triggerwire as tw
from edge_agentd.protocol.callwire import CallRequest, CallResult
from edge_agentd.protocol.framing import (
    IDEMPOTENT_OPS,
    MAX_ID_CHARS,
    PROTOCOL_VERSION,
    REPLY_KINDS,
    UNPACK_ERRORS,
    unpack_frame,
)
from edge_agentd.protocol.journalwire import Key, ResultRequest, RunRecord, RunsRequest, RunsResult
from edge_agentd.protocol.messages import (
    Message,
    ReplyBase,
    RequestBase,
    ResultBase,
    RunOutcome,
    Timing,
)
from edge_agentd.protocol.statuswire import (
    Counters,
    DaemonState,
    RunningRun,
    SkillProblem,
    StatusResult,
)
from edge_agentd.protocol.triggerwire import TriggerReply, TriggerRequest

MAX_NAME_CHARS: Final = 128
MAX_DEADLINE_MS: Final = 24 * 3600 * 1000
ErrorCode = Literal[
    "bad_request",
    "too_large",
    "unsupported_version",
    "busy",
    "deadline",
    "shutting_down",
    "not_found",
    "no_journal",
    "key_conflict",
    "internal",
]
ERROR_CODES: Final[tuple[str, ...]] = get_args(ErrorCode)

RunSource = Literal["zmq", "mqtt", "mcp"]
"""The ``source`` a ``run`` may state; triggers' runs are journaled as ``trigger:NAME``."""


class WireError(Exception):
    """A request that gets an ``error`` reply; ``request_id`` is what could be read of its id."""

    def __init__(self, code: ErrorCode, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.request_id = request_id


# -- requests: client to daemon -----------------------------------------------------------------


class RunRequest(RequestBase):
    """Run the agent loop on ``query``; with ``key``, at most once per key (the journal)."""

    op: Literal["run"]
    query: Annotated[str, Field(min_length=1)]
    workflow: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)] | None = None
    max_iterations: Annotated[int, Field(ge=1)] | None = None
    deadline_ms: Annotated[float, Field(gt=0, le=MAX_DEADLINE_MS, allow_inf_nan=False)] | None = (
        None
    )
    stream: bool = False
    key: Key | None = None
    source: RunSource = "zmq"
    """Where the run was asked, for the journal (``mqtt``: the bridge); a label, not a right."""


class StatusRequest(RequestBase):
    """Report the daemon's state; never touches the model."""

    op: Literal["status"]


class SkillsRequest(RequestBase):
    """List the skills, or those a workflow allows."""

    op: Literal["skills"]
    workflow: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)] | None = None


class CancelRequest(RequestBase):
    """Cancel the queued or running ``run`` whose id is ``target``."""

    op: Literal["cancel"]
    target: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]


_MoreRequests = ResultRequest | RunsRequest | TriggerRequest | CallRequest
Request = RunRequest | StatusRequest | SkillsRequest | CancelRequest | _MoreRequests


# -- replies: daemon to client ------------------------------------------------------------------
# Field order is wire order: msgpack maps keep the order the models declare their fields in.


class AcceptedReply(ReplyBase):
    """A streamed run entered the queue; ``position`` runs are ahead of it, and it may take
    ``max_iterations`` steps (after the daemon's cap), so a client can say "step 2 of 12"."""

    kind: Literal["accepted"] = "accepted"
    position: int
    max_iterations: int


class EventReply(ReplyBase):
    """A streamed run appended ``event`` (an EventStream entry, tagged by its ``type``)."""

    kind: Literal["event"] = "event"
    seq: int
    event: dict[str, Any]


class ErrorReply(ReplyBase):
    """The request failed; ``message`` is for people, ``code`` for programs."""

    kind: Literal["error"] = "error"
    code: ErrorCode
    message: str


class RunResult(ResultBase):
    """A finished run: its outcome, its answer and its whole EventStream."""

    op: Literal["run"] = "run"
    workflow: str | None
    timing: Timing
    outcome: RunOutcome
    answer: str | None
    state: dict[str, Any]
    """``{query, events}``, as the agent's ``STATE_ADAPTER`` writes it."""
    run_id: str | None = None
    """The journal's id of the run: the id of the request that started it (another request's
    when this one's ``key`` found an earlier run)."""


class SkillEntry(Message):
    name: str
    description: str
    parameters: dict[str, Any]
    """The JSON schema of the skill's arguments."""
    source: str
    timeout_s: float | None
    signature: str
    """``read_sensor(name: string)``: the one line the model is shown for the skill."""


class SkillsResult(ResultBase):
    op: Literal["skills"] = "skills"
    skills: list[SkillEntry]


CancelledRun = Literal["queued", "running", "watch"]


class CancelResult(ResultBase):
    op: Literal["cancel"] = "cancel"
    target: str
    cancelled: bool
    was: CancelledRun | None


_RunReply = AcceptedReply | EventReply | ErrorReply | RunResult
_MoreReplies = RunRecord | RunsResult | TriggerReply | CallResult
Reply = _RunReply | StatusResult | SkillsResult | CancelResult | _MoreReplies


# -- the table ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Exchange:
    """One op: the request a client sends, and every reply it may get, in the order they come.

    The last two are the final replies (a result or an error); any before them only come to a
    streamed run.
    """

    request: type[Request]
    replies: tuple[type[Reply], ...]


PROTOCOL: Final[Mapping[str, Exchange]] = {
    "run": Exchange(RunRequest, (AcceptedReply, EventReply, RunResult, ErrorReply)),
    "status": Exchange(StatusRequest, (StatusResult, ErrorReply)),
    "skills": Exchange(SkillsRequest, (SkillsResult, ErrorReply)),
    "cancel": Exchange(CancelRequest, (CancelResult, ErrorReply)),
    "result": Exchange(ResultRequest, (RunRecord, ErrorReply)),
    "runs": Exchange(RunsRequest, (RunsResult, ErrorReply)),
    "triggers": Exchange(tw.TriggersRequest, (tw.TriggersResult, ErrorReply)),
    "watch": Exchange(tw.WatchRequest, (EventReply, tw.WatchResult, ErrorReply)),
    "call": Exchange(CallRequest, (CallResult, ErrorReply)),
}
OPS: Final[tuple[str, ...]] = tuple(PROTOCOL)
TABLE_REPLY_KINDS: Final[tuple[str, ...]] = tuple(
    dict.fromkeys(
        reply.model_fields["kind"].default
        for exchange in PROTOCOL.values()
        for reply in exchange.replies
    )
)
"""The reply kinds the table's models carry; tests/protocol/test_wire.py holds framing's to them."""


# -- decoding -----------------------------------------------------------------------------------


def _describe(error: ValidationError, known: Mapping[str, Any]) -> str:
    """What is wrong, in the schema's words only: an error reply never echoes the client's input
    (a key the op does not take could be 60 KB long, and would come back with every reply)."""
    parts = []
    for item in error.errors(include_url=False, include_input=False)[:5]:
        location = [str(p) for p in item.get("loc", ())]
        if not location or location[0] not in known:
            parts.append("a field this op does not take")
            continue
        parts.append(f"{'.'.join(location)}: {item.get('msg', 'invalid')}")
    return "; ".join(dict.fromkeys(parts))


def decode_request(frame: bytes, *, max_bytes: int, max_query_chars: int) -> Request:
    """Turn one frame into a checked request, or raise :class:`WireError`."""
    if len(frame) > max_bytes:
        # Named for what the user sent: a long question is what makes a request this big.
        raise WireError(
            "too_large",
            f"the request is {len(frame)} bytes, over the daemon's limit of {max_bytes} bytes a "
            f"request; a question may be at most {max_query_chars} characters",
        )
    try:
        data = unpack_frame(frame)
    except UNPACK_ERRORS as exc:
        raise WireError(
            "bad_request", f"the frame is not one msgpack value: {exc or type(exc).__name__}"
        ) from None
    if not isinstance(data, dict):
        raise WireError("bad_request", f"the request must be a msgpack map, not {_kind(data)}")
    raw_id = data.get("id")
    request_id = raw_id if isinstance(raw_id, str) and 0 < len(raw_id) <= MAX_ID_CHARS else None
    if not all(isinstance(key, str) for key in data):
        raise WireError("bad_request", "every map key must be a string", request_id)
    if "v" not in data:
        raise WireError("bad_request", "the request has no protocol version 'v'", request_id)
    if data["v"] != PROTOCOL_VERSION or isinstance(data["v"], bool):
        raise WireError(
            "unsupported_version",
            f"this daemon speaks protocol v{PROTOCOL_VERSION} only",
            request_id,
        )
    exchange = PROTOCOL.get(data["op"]) if isinstance(data.get("op"), str) else None
    if exchange is None:
        raise WireError(
            "bad_request",
            f"op must be one of {', '.join(OPS)}",
            request_id,
        )
    query = data.get("query")
    if isinstance(query, str) and len(query) > max_query_chars:
        raise WireError(
            "too_large",
            f"the question is {len(query)} characters, over the daemon's limit of "
            f"{max_query_chars} characters",
            request_id,
        )
    try:
        return exchange.request.model_validate(data)
    except ValidationError as exc:
        raise WireError(
            "bad_request", _describe(exc, exchange.request.model_fields), request_id
        ) from None


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bytes: "bytes", int: "an integer"}.get(
        type(value), type(value).__name__
    )


# -- encoding -----------------------------------------------------------------------------------


def _fields(value: Any) -> Any:
    if isinstance(value, Message):
        return value.__dict__
    raise TypeError(f"cannot pack {type(value).__name__}")


def encode(message: Reply | Mapping[str, Any]) -> bytes:
    """Pack one reply (the daemon) or one request map (a client).

    A reply is packed straight from its validated fields, in the order its model declares them:
    the models declare no serializers, so this is ``model_dump()`` without walking and copying a
    run's whole state once more (a test holds the two equal).
    """
    packed: bytes = msgpack.packb(message, use_bin_type=True, datetime=False, default=_fields)
    return packed


__all__ = [
    "ERROR_CODES",
    "IDEMPOTENT_OPS",
    "OPS",
    "PROTOCOL",
    "PROTOCOL_VERSION",
    "REPLY_KINDS",
    "TABLE_REPLY_KINDS",
    "AcceptedReply",
    "CancelRequest",
    "CancelResult",
    "CancelledRun",
    "Counters",
    "DaemonState",
    "ErrorCode",
    "ErrorReply",
    "EventReply",
    "Exchange",
    "Reply",
    "Request",
    "ResultRequest",
    "RunOutcome",
    "RunRecord",
    "RunRequest",
    "RunResult",
    "RunSource",
    "RunningRun",
    "RunsRequest",
    "RunsResult",
    "SkillEntry",
    "SkillProblem",
    "SkillsRequest",
    "SkillsResult",
    "StatusRequest",
    "StatusResult",
    "Timing",
    "WireError",
    "decode_request",
    "encode",
]
