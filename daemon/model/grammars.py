"""Which grammar a model's replies are held to: the seed's JSON actions, or its own tool
format's (docs/design.md, "Tool formats")."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from edge_agentd.agent.actions import TaggedCalls, ToolFormat
from edge_agentd.agent.gemmacalls import GemmaCalls
from edge_agentd.model.constrained import GrammarError, schema_to_gbnf
from edge_agentd.model.gemmagrammar import gemma_gbnf
from edge_agentd.model.toolgrammar import tagged_gbnf


def grammar_of(calls: ToolFormat | None) -> Callable[[dict[str, Any]], str]:
    """How an action schema becomes a grammar for a model speaking ``calls`` (None: the seed's
    JSON actions)."""
    if calls is None:
        return schema_to_gbnf
    if isinstance(calls, GemmaCalls):
        return gemma_gbnf
    if isinstance(calls, TaggedCalls):
        return functools.partial(tagged_gbnf, calls)
    raise GrammarError(f"no grammar is written for the tool format {calls.name!r}")


__all__ = ["grammar_of"]
