"""Protocol v1 as a client needs it: the constants and the msgpack framing, without pydantic.

``edge-agent ask``, ``status`` and ``skills`` start in a fraction of the time that importing the
wire models (:mod:`edge_agentd.protocol.wire`) would cost them, which matters on a Pi and under Home
Assistant's 15 s kill. The daemon validates with :mod:`edge_agentd.protocol.wire`, which takes the
constants and the unpacker from here: there is one of each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgpack

PROTOCOL_VERSION: Final = 1
MAX_ID_CHARS: Final = 128
IDEMPOTENT_OPS: Final = frozenset({"status", "skills", "cancel", "result", "runs", "triggers"})
REPLY_KINDS: Final[tuple[str, ...]] = ("accepted", "event", "result", "error")


class FrameError(Exception):
    """A reply frame that is not a protocol v1 reply map."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def unpack_frame(frame: bytes) -> Any:
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


UNPACK_ERRORS = (ValueError, msgpack.UnpackException, msgpack.OutOfData)
# What a malformed frame raises (ExtraData, FormatError, StackError, bad UTF-8 are ValueErrors).


def encode_request(message: Mapping[str, Any]) -> bytes:
    """Pack one request map."""
    packed: bytes = msgpack.packb(message, use_bin_type=True, datetime=False)
    return packed


def decode_reply(frame: bytes, *, max_bytes: int = 64 * 1024 * 1024) -> dict[str, Any]:
    """One reply map, or :class:`FrameError` (code ``too_large`` or ``bad_request``)."""
    if len(frame) > max_bytes:
        raise FrameError("too_large", f"the reply is {len(frame)} bytes")
    try:
        data = unpack_frame(frame)
    except UNPACK_ERRORS as exc:
        raise FrameError("bad_request", f"the reply is not msgpack: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") not in REPLY_KINDS:
        raise FrameError("bad_request", "the reply is not a protocol v1 reply map")
    return data


__all__ = [
    "IDEMPOTENT_OPS",
    "MAX_ID_CHARS",
    "PROTOCOL_VERSION",
    "REPLY_KINDS",
    "UNPACK_ERRORS",
    "FrameError",
    "decode_reply",
    "encode_request",
    "unpack_frame",
]
