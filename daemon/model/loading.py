"""Loading a GGUF model: the embedded default or a file, warmed up before the first request."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from edge_agentd.agent.actions import tagged_calls_of
from edge_agentd.model.embedded import default_model_path
from edge_agentd.model.formats import choose_format
from edge_agentd.model.gguf import ModelLoadError, read_gguf
from edge_agentd.model.llama import LlamaModel
from edge_agentd.model.sizing import DEFAULT_N_CTX


def load_model(
    path: str | os.PathLike[str] | None = None,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int | None = None,
    warm_up: str | None = None,
    tool_calls: bool = False,
    **options: Any,
) -> LlamaModel:
    """Load a Gemma GGUF (``path=None``: the embedded Gemma 3 270M) and warm it up.

    ``warm_up`` is text to evaluate at once, normally ``agent.preamble()``, so the first query
    pays only for its own tokens. With ``tool_calls`` a model whose chat template has a tool-call
    format this project speaks (:func:`~edge_agentd.agent.actions.tagged_calls_of`) is spoken to
    in it; else, and for any other model, in the seed's JSON actions. Raises
    :class:`ModelLoadError` with a message that says how to fix a missing, truncated or
    unsupported file.
    """
    sha256: str | None = None
    if path is None:
        resolved, sha256 = default_model_path()
    elif isinstance(path, str | os.PathLike):
        resolved = Path(path)
    else:
        raise TypeError(f"path must be a str or a path, not {type(path).__name__}")
    if tool_calls and options.get("chat_format") is None:
        gguf = read_gguf(resolved)
        calls = tagged_calls_of(gguf.chat_template or "")
        if calls is not None:
            fmt = choose_format(gguf.architecture, gguf.chat_template, source=str(resolved))
            options["chat_format"] = dataclasses.replace(fmt, calls=calls)
    model = LlamaModel(resolved, n_ctx=n_ctx, n_threads=n_threads, sha256=sha256, **options)
    if warm_up is not None:
        try:
            model.warm_up(warm_up)
        except BaseException:
            model.close()
            raise
    return model


__all__ = ["ModelLoadError", "load_model"]
