"""The wire models of the trigger ops, ``triggers`` and ``watch`` (docs/protocol.md).

They sit beside :mod:`edge_agentd.protocol.wire`, whose :data:`~edge_agentd.protocol.wire.PROTOCOL`
table lists them, on the shared bases of :mod:`edge_agentd.protocol.messages`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from edge_agentd.protocol.messages import RequestBase, ResultBase

MAX_TRIGGER_NAME_CHARS = 64


class TriggersRequest(RequestBase):
    """List the configured triggers and where each stands."""

    op: Literal["triggers"]


class WatchRequest(RequestBase):
    """Stream each trigger run's result as it ends (bare DEALER only), until cancelled."""

    op: Literal["watch"]
    trigger: Annotated[str, Field(min_length=1, max_length=MAX_TRIGGER_NAME_CHARS)] | None = None


class TriggersResult(ResultBase):
    op: Literal["triggers"] = "triggers"
    triggers: list[dict[str, Any]]
    """One map per trigger, in config order (docs/protocol.md, "`triggers`")."""


class WatchResult(ResultBase):
    """A watch ended by ``cancel``: how many trigger results it was sent."""

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
