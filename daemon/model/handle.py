"""The llama.cpp model and context behind :class:`~edge_agent.model.llama.LlamaModel`.

:class:`LlamaHandle` loads and checks them, frees them exactly once, reports what they are, and
turns text into tokens and tokens back into bytes. The KV cache (:mod:`edge_agent.model.kvcache`)
and decoding (:mod:`edge_agent.model.decoding`) build on it.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from edge_agent.agent.prompt import ChatFormat
from edge_agent.agent.protocol import ModelError
from edge_agent.model.constrained import GrammarCache
from edge_agent.model.formats import choose_format
from edge_agent.model.gguf import ModelLoadError, read_gguf
from edge_agent.model.sizing import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_BATCH,
    DEFAULT_N_CTX,
    DEFAULT_N_UBATCH,
    _kv_cache_bytes,
    _positive_int,
    default_threads,
)

_PIECE_BUFFER = 64


class ModelClosed(ModelError):
    """The model was closed; the daemon is shutting down."""

    code = "model_closed"


def _free(model: Any, context: Any, grammars: GrammarCache) -> None:
    grammars.close()
    if context:
        llama_cpp.llama_free(context)
    if model:
        llama_cpp.llama_model_free(model)


class LlamaHandle:
    """A loaded GGUF model and its llama.cpp context, freed by :meth:`close` or when collected."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_batch: int = DEFAULT_N_BATCH,
        n_ubatch: int = DEFAULT_N_UBATCH,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        seed: int = 0,
        chat_format: ChatFormat | None = None,
        sha256: str | None = None,
        verbose: bool = False,
    ) -> None:
        self.n_ctx = _positive_int("n_ctx", n_ctx, 64)
        self.n_threads = (
            default_threads() if n_threads is None else _positive_int("n_threads", n_threads)
        )
        self.n_batch = _positive_int("n_batch", n_batch, 1)
        self.n_ubatch = min(self.n_batch, _positive_int("n_ubatch", n_ubatch, 1))
        self.max_tokens = _positive_int("max_tokens", max_tokens)
        self.temperature = float(temperature)
        self.seed = int(seed)
        if chat_format is not None and not isinstance(chat_format, ChatFormat):
            raise TypeError(f"chat_format must be a ChatFormat, not {type(chat_format).__name__}")
        self.path = Path(path)
        gguf = read_gguf(self.path)
        self.architecture = gguf.architecture
        self.chat_format: ChatFormat = chat_format or choose_format(
            gguf.architecture, gguf.chat_template, source=str(self.path)
        )
        self._gguf_name = gguf.name
        self.kv_cache_bytes = _kv_cache_bytes(gguf.metadata, gguf.architecture, self.n_ctx)
        self._size_bytes = gguf.size_bytes
        self._sha256 = sha256

        from llama_cpp import _logger  # noqa: PLC0415 - its import installs the log hook

        _logger.set_verbose(verbose)
        llama_cpp.llama_backend_init()
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = 0
        model = llama_cpp.llama_model_load_from_file(str(self.path).encode(), model_params)
        if not model:
            raise ModelLoadError(
                f"llama.cpp could not load {self.path} (architecture {gguf.architecture!r}). "
                "Check that the file is a complete GGUF of a model this llama.cpp supports, "
                "or omit the path to use the embedded default model."
            )
        context_params = llama_cpp.llama_context_default_params()
        context_params.n_ctx = self.n_ctx
        context_params.n_batch = self.n_batch
        context_params.n_ubatch = self.n_ubatch
        context_params.n_seq_max = 1
        context_params.n_threads = self.n_threads
        context_params.n_threads_batch = self.n_threads
        # A partial cut-back of Gemma's sliding-window cache is only correct at full size.
        context_params.swa_full = True
        context_params.no_perf = True
        context = llama_cpp.llama_init_from_model(model, context_params)
        if not context:
            llama_cpp.llama_model_free(model)
            raise ModelLoadError(
                f"llama.cpp could not create a context of {self.n_ctx} tokens for {self.path}; "
                "try a smaller n_ctx (is there enough memory?)"
            )
        self._model: Any = model
        self._context: Any = context
        self._vocab: Any = llama_cpp.llama_model_get_vocab(model)
        self._memory: Any = llama_cpp.llama_get_memory(context)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self._add_bos = bool(llama_cpp.llama_vocab_get_add_bos(self._vocab))
        self._bos = int(llama_cpp.llama_vocab_bos(self._vocab))
        self._grammars = GrammarCache(self._vocab, self.n_vocab)
        self._finalizer = weakref.finalize(self, _free, model, context, self._grammars)
        self._lock = threading.Lock()
        self._cached: list[int] = []
        """The tokens whose keys and values are in the cache, in order from position 0."""
        self._piece = ctypes.create_string_buffer(_PIECE_BUFFER)
        self._batch_tokens = (llama_cpp.llama_token * self.n_batch)()
        self._rng = np.random.default_rng(self.seed)
        self._eog = self._end_of_generation_tokens()

    # -- facts ----------------------------------------------------------------------------------

    @property
    def info(self) -> dict[str, Any]:
        """What the daemon's ``status`` reports about the model."""
        return {
            "path": str(self.path),
            "name": self._gguf_name,
            "architecture": self.architecture,
            "chat_format": self.chat_format.name,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "file_size_bytes": self._size_bytes,
            "sha256": self._sha256,
            "swa_full": True,
            "kv_cache_bytes": self.kv_cache_bytes,
            "cached_tokens": len(self._cached),
        }

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Free llama.cpp's model and context; later calls raise :class:`ModelClosed`."""
        with self._lock:
            self._finalizer()
            self._cached = []

    def _check_open(self) -> None:
        if self.closed:
            raise ModelClosed("the model has been closed")

    # -- tokens ---------------------------------------------------------------------------------

    def tokenize(self, text: str, *, add_bos: bool = True) -> list[int]:
        """The tokens of ``text``, control markers such as ``<start_of_turn>`` included."""
        data = text.encode("utf-8", errors="replace")
        bos = add_bos and self._add_bos
        # Power-of-two sizes: ctypes keeps every array type it makes, so sizes must not vary freely.
        capacity = 1 << (len(data) + 1).bit_length()
        buffer = (llama_cpp.llama_token * capacity)()
        count = llama_cpp.llama_tokenize(self._vocab, data, len(data), buffer, capacity, bos, True)
        if count < 0:
            capacity = 1 << (-count - 1).bit_length()
            buffer = (llama_cpp.llama_token * capacity)()
            count = llama_cpp.llama_tokenize(
                self._vocab, data, len(data), buffer, capacity, bos, True
            )
            if count < 0:
                raise ModelError(f"llama.cpp could not tokenize a text of {len(data)} bytes")
        return list(buffer[:count])

    def _piece_bytes(self, token: int) -> bytes:
        n = llama_cpp.llama_token_to_piece(self._vocab, token, self._piece, _PIECE_BUFFER, 0, False)
        if n < 0:
            big = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self._vocab, token, big, -n, 0, False)
            return big.raw[:n]
        return self._piece.raw[:n]

    def _end_of_generation_tokens(self) -> frozenset[int]:
        eog = {t for t in range(self.n_vocab) if llama_cpp.llama_vocab_is_eog(self._vocab, t)}
        for stop in self.chat_format.stop:
            tokens = self.tokenize(stop, add_bos=False)
            if len(tokens) == 1:
                eog.add(tokens[0])
        return frozenset(eog)


__all__ = ["LlamaHandle", "ModelClosed"]
