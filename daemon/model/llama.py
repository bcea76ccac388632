"""A Gemma GGUF kept resident through llama.cpp, that never re-reads what it has already seen.

The handle remembers which tokens its KV cache holds. Each prompt is tokenized, compared with that
list, and only the tokens after the longest common prefix are evaluated: across the steps of one
run (the prompt only grows) and across runs (the system part is byte-identical). Gemma's sliding
window cache is only safe to cut back partially at full size, hence ``swa_full=True``.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt

from edge_agent.events import Usage
from edge_agent.model.constrained import ActionGrammar, GrammarCache
from edge_agent.model.embedded import default_model_path
from edge_agent.model.formats import choose_format
from edge_agent.model.gguf import ModelLoadError, read_gguf
from edge_agent.model.protocol import Completion, ContextExceeded, ModelError
from edge_agent.prompt import ChatFormat

log = logging.getLogger(__name__)

DEFAULT_N_CTX = 4096
DEFAULT_MAX_TOKENS = 256
DEFAULT_N_BATCH = 512
# llama.cpp sizes its compute buffer for a whole micro-batch of vocabulary-wide logits (262k for
# Gemma); 128 tokens keep that small at almost the same prefill speed on a CPU.
DEFAULT_N_UBATCH = 128
_PIECE_BUFFER = 64


class ModelClosed(ModelError):
    """The model was closed; the daemon is shutting down."""

    code = "model_closed"


class DecodeFailed(ModelError):
    """llama.cpp could not evaluate a batch of tokens."""

    code = "decode_failed"


def _positive_int(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def default_threads() -> int:
    """The CPUs this process may run on (all four cores of a Raspberry Pi 5)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _kv_cache_bytes(metadata: dict[str, Any], architecture: str | None, n_ctx: int) -> int | None:
    """The size of a full f16 KV cache of ``n_ctx`` tokens, from the GGUF's hyperparameters."""

    def number(key: str) -> int | None:
        value = metadata.get(f"{architecture}.{key}")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    layers, kv_heads = number("block_count"), number("attention.head_count_kv")
    heads, width = number("attention.head_count"), number("embedding_length")
    head_dim = width // heads if width and heads else None
    key_len = number("attention.key_length") or head_dim
    value_len = number("attention.value_length") or head_dim
    if not (layers and kv_heads and key_len and value_len):
        return None
    return n_ctx * layers * kv_heads * (key_len + value_len) * 2


def _free(model: Any, context: Any, grammars: GrammarCache) -> None:
    grammars.close()
    if context:
        llama_cpp.llama_free(context)
    if model:
        llama_cpp.llama_model_free(model)


class LlamaModel:
    """A resident GGUF model; satisfies :class:`edge_agent.model.ModelHandle`.

    ``generate(prompt, action_schema=..., deadline=..., should_stop=..., max_tokens=...)`` returns
    a :class:`Completion` whose ``usage`` says how many prompt tokens were actually evaluated.
    One call runs at a time; concurrent callers wait.
    """

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

    def __enter__(self) -> LlamaModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    # -- the cache ------------------------------------------------------------------------------

    def _reuse(self, tokens: list[int]) -> int:
        """Keep the longest cached prefix of ``tokens`` (all but the last) and drop the rest."""
        cached = self._cached
        limit = min(len(cached), len(tokens) - 1)
        keep = 0
        while keep < limit and cached[keep] == tokens[keep]:
            keep += 1
        if keep < len(cached):
            if not llama_cpp.llama_memory_seq_rm(self._memory, -1, keep, -1):
                llama_cpp.llama_memory_clear(self._memory, True)
                keep = 0
            del cached[keep:]
        return keep

    def _evaluate(self, tokens: list[int], interrupted: Callable[[], bool] | None = None) -> bool:
        """Run ``tokens`` through the model after what is cached; False if interrupted first."""
        for start in range(0, len(tokens), self.n_batch):
            if interrupted is not None and start and interrupted():
                return False
            chunk: list[Any] = tokens[start : start + self.n_batch]
            array = self._batch_tokens
            array[: len(chunk)] = chunk
            batch = llama_cpp.llama_batch_get_one(array, len(chunk))
            status = llama_cpp.llama_decode(self._context, batch)
            if status != 0:
                # The cache may hold part of the batch now; forget it all rather than guess.
                llama_cpp.llama_memory_clear(self._memory, True)
                self._cached = []
                raise DecodeFailed(f"llama.cpp failed to evaluate {len(chunk)} tokens ({status})")
            self._cached.extend(chunk)
        return True

    def _logits(self) -> npt.NDArray[np.float32]:
        pointer = llama_cpp.llama_get_logits_ith(self._context, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def warm_up(self, text: str) -> None:
        """Evaluate ``text`` (the prompt prefix every request shares) into the cache now."""
        if not isinstance(text, str):
            raise TypeError(f"warm_up takes a str, not {type(text).__name__}")
        with self._lock:
            self._check_open()
            tokens = self.tokenize(text)
            # A shared prefix that leaves no room for a reply makes every request fail: say so now.
            if len(tokens) + self.max_tokens > self.n_ctx:
                raise ContextExceeded(len(tokens), self.n_ctx)
            keep = self._reuse([*tokens, -1])
            self._evaluate(tokens[keep:])

    def forget(self) -> None:
        """Empty the cache, so the next prompt is evaluated from scratch (for comparisons)."""
        with self._lock:
            self._check_open()
            llama_cpp.llama_memory_clear(self._memory, True)
            self._cached = []

    def _check_open(self) -> None:
        if self.closed:
            raise ModelClosed("the model has been closed")

    # -- generation -----------------------------------------------------------------------------

    def _pick(
        self,
        logits: npt.NDArray[np.float32],
        temperature: float,
        ids: npt.NDArray[np.int32] | None = None,
    ) -> int:
        """Greedy, or sampled at ``temperature``, among ``ids`` (default: the whole vocabulary)
        whose ``logits`` are given in the same order; -inf marks a token that is not allowed."""
        if temperature <= 0.0:
            best = int(np.argmax(logits))
        else:
            scaled = np.where(np.isfinite(logits), logits / temperature, -np.inf)
            scaled -= scaled.max()
            weights = np.exp(scaled)
            best = int(self._rng.choice(len(weights), p=weights / weights.sum()))
        return best if ids is None else int(ids[best])

    def generate(
        self,
        prompt: str,
        *,
        action_schema: dict[str, Any] | None = None,
        constrained: bool = True,
        deadline: float | None = None,
        should_stop: Callable[[], bool] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        full_grammar_pass: bool = False,
        **_ignored: Any,
    ) -> Completion:
        """The model's reply to ``prompt``, up to the end of its turn or ``max_tokens`` tokens.

        With ``action_schema`` (and ``constrained`` left on) the reply follows that JSON schema.
        ``deadline`` (a ``time.monotonic()`` instant) and ``should_stop`` are checked between
        tokens; either ends the reply with ``usage.stop == "interrupted"``. Raises
        :class:`ContextExceeded` when the prompt leaves no room for ``max_tokens``.
        ``full_grammar_pass=True`` masks the whole vocabulary at every token, as
        llama-cpp-python does; it exists to measure what the default path saves.
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        cap = self.max_tokens if max_tokens is None else _positive_int("max_tokens", max_tokens)
        temp = self.temperature if temperature is None else float(temperature)

        def interrupted() -> bool:
            if should_stop is not None and should_stop():
                return True
            return deadline is not None and time.monotonic() >= deadline

        with self._lock:
            self._check_open()
            tokens = self.tokenize(prompt) or [self._bos]
            if len(tokens) + cap > self.n_ctx:
                raise ContextExceeded(len(tokens), self.n_ctx)
            grammar = (
                self._grammars.get(action_schema)
                if constrained and action_schema is not None
                else None
            )
            started = time.perf_counter()
            keep = self._reuse(tokens)
            evaluated = len(tokens) - keep
            if not self._evaluate(tokens[keep:], interrupted):
                return _completion(
                    b"",
                    len(tokens),
                    evaluated,
                    0,
                    started=started,
                    prefill_done=None,
                    stop="interrupted",
                )
            prefill_done = time.perf_counter()
            text, generated, stop = self._decode(
                grammar, cap, temp, interrupted, full_pass=full_grammar_pass
            )
            return _completion(
                text,
                len(tokens),
                evaluated,
                generated,
                started=started,
                prefill_done=prefill_done,
                stop=stop,
            )

    def _decode(
        self,
        grammar: ActionGrammar | None,
        cap: int,
        temperature: float,
        interrupted: Callable[[], bool],
        *,
        full_pass: bool = False,
    ) -> tuple[bytes, int, str]:
        """Sample up to ``cap`` tokens: (text, tokens generated, stop reason)."""
        if grammar is not None:
            grammar.reset()
        eog = self._eog
        stops = [s.encode() for s in self.chat_format.stop if s]
        text = bytearray()
        generated = 0
        stop = "length"
        while generated < cap:
            logits = self._logits()
            token = self._pick(logits, temperature)
            if grammar is not None and (full_pass or not grammar.allows(token)):
                allowed, allowed_logits = grammar.mask(logits, full=full_pass)
                token = self._pick(allowed_logits, temperature, allowed)
            if token in eog:
                stop = "stop"
                break
            if grammar is not None:
                grammar.accept(token)
            generated += 1
            piece = self._piece_bytes(token)
            text += piece
            if piece and stops:
                hit = min((i for s in stops if (i := text.find(s)) >= 0), default=-1)
                if hit >= 0:
                    del text[hit:]
                    stop = "stop"
                    break
            if generated >= cap:
                break
            if interrupted():
                stop = "interrupted"
                break
            self._evaluate([token])
        return bytes(text), generated, stop


def _completion(
    text: bytes,
    n_prompt: int,
    evaluated: int,
    generated: int,
    *,
    started: float,
    prefill_done: float | None,
    stop: str,
) -> Completion:
    now = time.perf_counter()
    usage = Usage(
        model_s=now - started,
        prompt_tokens=n_prompt,
        evaluated_tokens=evaluated,
        generated_tokens=generated,
        prefill_s=(prefill_done or now) - started,
        decode_s=now - prefill_done if prefill_done is not None else 0.0,
        stop=stop,
    )
    # A reply cut inside a multi-byte character keeps a replacement mark, never raises.
    return Completion(text.decode("utf-8", errors="replace"), usage=usage)


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


__all__ = ["DecodeFailed", "LlamaModel", "ModelClosed", "ModelLoadError", "load_model"]
