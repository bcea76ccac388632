"""The base models of protocol v1's messages, shared by wire (the ops) and journalwire.

Strict, closed and frozen: a field of the wrong type, or one the message does not take, is a
``bad_request``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from edge_agentd.protocol.framing import MAX_ID_CHARS, PROTOCOL_VERSION

RunOutcome = Literal["answered", "max_iterations", "retries_exhausted", "interrupted"]
"""Why a run stopped: the agent's ``Outcome`` as the wire carries it (a test keeps them equal)."""


class Message(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class RequestBase(Message):
    v: Literal[1]
    id: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]


class ReplyBase(Message):
    v: Literal[1] = PROTOCOL_VERSION
    id: str | None
    """The request's id, or None when it could not be read."""


class ResultBase(ReplyBase):
    kind: Literal["result"] = "result"


class Timing(Message):
    queued_ms: float
    run_ms: float


__all__ = ["Message", "ReplyBase", "RequestBase", "ResultBase", "RunOutcome", "Timing"]
