"""The wire models of the trigger ops, ``triggers`` and ``watch`` (docs/protocol.md).

They sit beside :mod:`edge_agent.protocol.wire`, whose :data:`~edge_agent.protocol.wire.PROTOCOL`
table lists them; like it, this module imports nothing of the package but the framing constants.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from edge_agent.protocol.framing import MAX_ID_CHARS, PROTOCOL_VERSION

MAX_TRIGGER_NAME_CHARS = 64


class _Message(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class TriggersRequest(_Message):
    """List the configured triggers and where each stands."""

    v: Literal[1]
    id: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
    op: Literal["triggers"]


class WatchRequest(_Message):
    """Stream each trigger run's result as it ends (bare DEALER only), until cancelled."""

    v: Literal[1]
    id: Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
    op: Literal["watch"]
    trigger: Annotated[str, Field(min_length=1, max_length=MAX_TRIGGER_NAME_CHARS)] | None = None


class TriggersResult(_Message):
    v: Literal[1] = PROTOCOL_VERSION
    id: str | None
    kind: Literal["result"] = "result"
    op: Literal["triggers"] = "triggers"
    triggers: list[dict[str, Any]]
    """One map per trigger, in config order (docs/protocol.md, "`triggers`")."""


class WatchResult(_Message):
    """A watch ended by ``cancel``: how many trigger results it was sent."""

    v: Literal[1] = PROTOCOL_VERSION
    id: str | None
    kind: Literal["result"] = "result"
    op: Literal["watch"] = "watch"
    sent: int


TriggerRequest = TriggersRequest | WatchRequest
TriggerReply = TriggersResult | WatchResult

__all__ = [
    "TriggerReply",
    "TriggerRequest",
    "TriggersRequest",
    "TriggersResult",
    "WatchRequest",
    "WatchResult",
]
