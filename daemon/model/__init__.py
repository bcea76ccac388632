"""Models: the ModelHandle protocol, the scripted MockModel, and the llama.cpp loader."""

from __future__ import annotations

from typing import Any

from edge_agentd.agent.protocol import Completion, ContextExceeded, ModelError, ModelHandle
from edge_agentd.model.scripted import MockModel, MockModelExhausted

__all__ = [
    "Completion",
    "ContextExceeded",
    "MockModel",
    "MockModelExhausted",
    "ModelError",
    "ModelHandle",
    "load_model",
]


def load_model(path: str | None = None, **options: Any) -> ModelHandle:
    """Load a GGUF through llama.cpp; ``path=None`` loads the embedded default model.

    llama.cpp is imported here, not at package import, so tools that never load a model stay light.
    """
    from edge_agentd.model.loading import load_model as _load  # noqa: PLC0415

    handle: ModelHandle = _load(path, **options)
    return handle
