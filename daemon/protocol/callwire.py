"""The ``call`` op of protocol v1: one skill called directly, without the model (docs/protocol.md,
"`call`"). The Model Context Protocol server calls skills this way, as triggers' checks do."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field

from edge_agentd.protocol.messages import RequestBase, ResultBase

MAX_SKILL_CHARS: Final = 128
CallSource = Literal["zmq", "mcp"]
"""Where a ``call`` was asked, for the journal; a label, never a right."""


class CallRequest(RequestBase):
    """Call the skill ``skill`` with ``arguments``, within its timeout; journaled as a run."""

    op: Literal["call"]
    skill: Annotated[str, Field(min_length=1, max_length=MAX_SKILL_CHARS)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    source: CallSource = "zmq"


class CallResult(ResultBase):
    """What the skill gave (``ok``), or why it gave nothing: it raised or ran past its timeout."""

    op: Literal["call"] = "call"
    skill: str
    ok: bool
    result: Any
    """The skill's result (JSON values), or nil when ``ok`` is false."""
    error: str | None
    """``TypeError: ...``, or that it ran past its timeout; nil when ``ok``."""
    ms: float
    """How long the call took, in milliseconds."""


__all__ = ["MAX_SKILL_CHARS", "CallRequest", "CallResult", "CallSource"]
