"""Loading a GGUF model: the embedded default or a file, warmed up before the first request."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from edge_agentd.model.embedded import default_model_path
from edge_agentd.model.gguf import ModelLoadError
from edge_agentd.model.llama import LlamaModel
from edge_agentd.model.sizing import DEFAULT_N_CTX


def load_model(
    path: str | os.PathLike[str] | None = None,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int | None = None,
    warm_up: str | None = None,
    **options: Any,
) -> LlamaModel:
    """Load a Gemma GGUF (``path=None``: the embedded Gemma 3 270M) and warm it up.

    ``warm_up`` is text to evaluate at once, normally ``agent.preamble()``, so the first query
    pays only for its own tokens. Raises :class:`ModelLoadError` with a message that says how to
    fix a missing, truncated or unsupported file.
    """
    sha256: str | None = None
    if path is None:
        resolved, sha256 = default_model_path()
    elif isinstance(path, str | os.PathLike):
        resolved = Path(path)
    else:
        raise TypeError(f"path must be a str or a path, not {type(path).__name__}")
    model = LlamaModel(resolved, n_ctx=n_ctx, n_threads=n_threads, sha256=sha256, **options)
    if warm_up is not None:
        try:
            model.warm_up(warm_up)
        except BaseException:
            model.close()
            raise
    return model



__all__ = ["ModelLoadError", "load_model"]
