"""Protocol v1 on the wire: one msgpack map per frame, requests checked by pydantic.

Everything a peer sends goes through :func:`decode_request`, which either returns a validated
request or raises :class:`WireError` carrying the stable error code of the reply. Replies are built
by the ``*_reply`` helpers and packed by :func:`encode`. ``docs/protocol.md`` is the prose version.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, get_args

import msgpack
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

PROTOCOL_VERSION: Final = 1
MAX_ID_CHARS: Final = 128
MAX_NAME_CHARS: Final = 128
MAX_DEADLINE_MS: Final = 24 * 3600 * 1000

ErrorCode = Literal[
    "bad_request",
    "too_large",
    "unsupported_version",
    "busy",
    "deadline",
    "shutting_down",
    "internal",
]
ERROR_CODES: Final[tuple[str, ...]] = get_args(ErrorCode)
OPS: Final[tuple[str, ...]] = ("run", "status", "skills", "cancel")
IDEMPOTENT_OPS: Final = frozenset({"status", "skills", "cancel"})


class WireError(Exception):
    """A request that gets an ``error`` reply; ``request_id`` is what could be read of its id."""

    def __init__(self, code: ErrorCode, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.request_id = request_id


class _Request(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    v: Literal[1]
    id: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]


class RunRequest(_Request):
    """Run the agent loop on ``query``."""

    op: Literal["run"]
    query: Annotated[str, Field(min_length=1)]
    workflow: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)] | None = None
    max_iterations: Annotated[int, Field(ge=1)] | None = None
    deadline_ms: Annotated[float, Field(gt=0, le=MAX_DEADLINE_MS, allow_inf_nan=False)] | None = (
        None
    )
    stream: bool = False


class StatusRequest(_Request):
    """Report the daemon's state; never touches the model."""

    op: Literal["status"]


class SkillsRequest(_Request):
    """List the skills, or those a workflow allows."""

    op: Literal["skills"]
    workflow: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)] | None = None


class CancelRequest(_Request):
    """Cancel the queued or running ``run`` whose id is ``target``."""

    op: Literal["cancel"]
    target: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]


Request = Annotated[
    RunRequest | StatusRequest | SkillsRequest | CancelRequest, Field(discriminator="op")
]
REQUEST_ADAPTER: TypeAdapter[RunRequest | StatusRequest | SkillsRequest | CancelRequest] = (
    TypeAdapter(Request)
)


def _unpack(frame: bytes) -> Any:
    """Exactly one msgpack value, every container and string bounded by the frame's own size.

    strict_map_key refuses map keys that are not strings or bytes, and the C unpacker caps the
    nesting depth on its own.
    """
    size = max(len(frame), 1)
    unpacker = msgpack.Unpacker(
        raw=False,
        strict_map_key=True,
        max_buffer_size=size,
        max_str_len=size,
        max_bin_len=size,
        max_array_len=size,
        max_map_len=size,
        max_ext_len=size,
    )
    unpacker.feed(frame)
    value = unpacker.unpack()
    if unpacker.tell() != len(frame):
        raise ValueError(f"{len(frame) - unpacker.tell()} bytes follow the first value")
    return value


_UNPACK_ERRORS = (ValueError, msgpack.UnpackException, msgpack.OutOfData)
# What a malformed frame raises (ExtraData, FormatError, StackError, bad UTF-8 are ValueErrors).


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False, include_input=False)[:5]:
        location = ".".join(str(p) for p in item.get("loc", ()) if p not in OPS)
        parts.append(f"{location or 'request'}: {item.get('msg', 'invalid')}")
    return "; ".join(parts)


def decode_request(
    frame: bytes, *, max_bytes: int, max_query_chars: int
) -> RunRequest | StatusRequest | SkillsRequest | CancelRequest:
    """Turn one frame into a checked request, or raise :class:`WireError`."""
    if len(frame) > max_bytes:
        raise WireError("too_large", f"the request is {len(frame)} bytes; the limit is {max_bytes}")
    try:
        data = _unpack(frame)
    except _UNPACK_ERRORS as exc:
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
            f"this daemon speaks protocol v{PROTOCOL_VERSION}, not v={_short(data['v'])}",
            request_id,
        )
    if data.get("op") not in OPS:
        raise WireError(
            "bad_request",
            f"op must be one of {', '.join(OPS)}, not {_short(data.get('op'))}",
            request_id,
        )
    query = data.get("query")
    if isinstance(query, str) and len(query) > max_query_chars:
        raise WireError(
            "too_large",
            f"the query is {len(query)} characters; the limit is {max_query_chars}",
            request_id,
        )
    try:
        return REQUEST_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise WireError("bad_request", _describe(exc), request_id) from None


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bytes: "bytes", int: "an integer"}.get(
        type(value), type(value).__name__
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def encode(reply: dict[str, Any]) -> bytes:
    """Pack one reply map."""
    packed: bytes = msgpack.packb(reply, use_bin_type=True, datetime=False)
    return packed


def error_reply(request_id: str | None, code: ErrorCode, message: str) -> dict[str, Any]:
    return {
        "v": PROTOCOL_VERSION,
        "id": request_id,
        "kind": "error",
        "code": code,
        "message": message,
    }


def result_reply(request_id: str, op: str, **fields: Any) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "id": request_id, "kind": "result", "op": op, **fields}


def accepted_reply(request_id: str, position: int) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "id": request_id, "kind": "accepted", "position": position}


def event_reply(request_id: str, seq: int, event: dict[str, Any]) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "id": request_id, "kind": "event", "seq": seq, "event": event}


def decode_reply(frame: bytes, *, max_bytes: int = 64 * 1024 * 1024) -> dict[str, Any]:
    """The client side: one reply map, or :class:`WireError` with code ``bad_request``."""
    if len(frame) > max_bytes:
        raise WireError("too_large", f"the reply is {len(frame)} bytes")
    try:
        data = _unpack(frame)
    except _UNPACK_ERRORS as exc:
        raise WireError("bad_request", f"the reply is not msgpack: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") not in (
        "accepted",
        "event",
        "result",
        "error",
    ):
        raise WireError("bad_request", "the reply is not a protocol v1 reply map")
    return data


__all__ = [
    "ERROR_CODES",
    "IDEMPOTENT_OPS",
    "OPS",
    "PROTOCOL_VERSION",
    "CancelRequest",
    "ErrorCode",
    "RunRequest",
    "SkillsRequest",
    "StatusRequest",
    "WireError",
    "accepted_reply",
    "decode_reply",
    "decode_request",
    "encode",
    "error_reply",
    "event_reply",
    "result_reply",
]
