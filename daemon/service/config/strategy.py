"""Which help the loop gives the model, from ``[model] strategy`` and ``answers``
(docs/design.md, "Small models" and "One model turn").

A model too small to drive the loop by itself (the embedded Gemma 3 270M) is guided; a larger one
(Gemma 4 E2B) drives it, its calls its own, and its answer, once it has results, is the engine's
sentence that fits the question (``answers = "engine"``) or its own words (``"model"``).
"""

from __future__ import annotations

from typing import Literal

from edge_agentd.agent.guide import Guide
from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.guidance.answering import Answering
from edge_agentd.guidance.guidance import Guidance

Strategy = Literal["auto", "plain", "guided"]
Answers = Literal["engine", "model"]
ToolFormat = Literal["native", "json"]

SMALL_MODEL_BYTES = 1 << 30
"""Under ``auto``, a model file smaller than this is guided: Gemma 3 270M's is 241 MiB, Gemma 4
E2B's (Q4_K_M) about 3 GiB."""


def guidance_for(strategy: Strategy, model: ModelHandle, answers: Answers = "engine") -> Guide:
    """The help ``model`` gets under ``strategy``: :class:`Guidance` for a small model, else
    :class:`Answering` (its calls its own; its answers the engine's unless ``answers`` is
    ``"model"``)."""
    if strategy == "guided":
        return Guidance()
    driving = Answering(own_words=answers == "model")
    if strategy == "plain":
        return driving
    info = model.info
    size = info.get("file_size_bytes")
    if size is None and info.get("kind") == "mock":
        # A scripted model's replies are the user's script (`serve --model mock:FILE`): under
        # auto, its answers stay as written; `plain` still gives it the engine's.
        return Answering(own_words=True)
    return driving if drives_loop(strategy, size) else Guidance()


def drives_loop(strategy: Strategy, file_size: object) -> bool:
    """Whether a model of ``file_size`` bytes drives the loop under ``strategy`` (``auto``:
    unless its file is under :data:`SMALL_MODEL_BYTES`). Only a model that drives the loop
    writes its own calls, so only it is spoken to in its own tool format."""
    if strategy != "auto":
        return strategy == "plain"
    small = (
        isinstance(file_size, int)
        and not isinstance(file_size, bool)
        and 0 < file_size < SMALL_MODEL_BYTES
    )
    return not small


def strategy_name(guide: Guide) -> str:
    """What the log and status call ``guide``: ``guided``, or ``plain`` (the model drives)."""
    return "guided" if isinstance(guide, Guidance) else "plain"


__all__ = [
    "SMALL_MODEL_BYTES",
    "Answers",
    "Strategy",
    "ToolFormat",
    "drives_loop",
    "guidance_for",
    "strategy_name",
]
