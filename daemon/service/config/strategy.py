"""Which help the loop gives the model, from ``[model] strategy`` (docs/design.md, "Small models").

A model too small to drive the loop by itself (the embedded Gemma 3 270M) is guided; a larger one
(Gemma 4 E2B) is left alone, so it never answers worse than it would unhelped.
"""

from __future__ import annotations

from typing import Literal

from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.guidance.guidance import Guidance

Strategy = Literal["auto", "plain", "guided"]

SMALL_MODEL_BYTES = 1 << 30
"""Under ``auto``, a model file smaller than this is guided: Gemma 3 270M's is 241 MiB, Gemma 4
E2B's (Q4_K_M) about 3 GiB."""


def guidance_for(strategy: Strategy, model: ModelHandle) -> Guidance | None:
    """The guidance for ``model`` under ``strategy``; None leaves the model alone."""
    if strategy == "guided":
        return Guidance()
    if strategy == "plain":
        return None
    size = model.info.get("file_size_bytes")
    small = isinstance(size, int) and not isinstance(size, bool) and 0 < size < SMALL_MODEL_BYTES
    return Guidance() if small else None


__all__ = ["SMALL_MODEL_BYTES", "Strategy", "guidance_for"]
