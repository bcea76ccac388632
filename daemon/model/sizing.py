"""The sizes of a llama.cpp context: their defaults, their checks, the threads, the KV cache."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from edge_agentd.agent.checks import check_count

DEFAULT_N_CTX = 4096
DEFAULT_MAX_TOKENS = 256
DEFAULT_N_BATCH = 512
# llama.cpp sizes its compute buffer for a whole micro-batch of vocabulary-wide logits (262k for
# Gemma); 128 tokens keep that small at almost the same prefill speed on a CPU.
DEFAULT_N_UBATCH = 128
# The conversation plus up to 23 short texts kept for scoring; they share the n_ctx cells. A
# guided model scores the question after every skill's description and no skill's, then after
# a result's line names: with too few kept, the lines evict the descriptions and each question
# evaluates them again. Each sequence costs llama.cpp a vocabulary's worth of logits buffer, so
# the count is the fewest that hold the built-in skills and a result's lines (docs/performance.md,
# "What the code's choices rest on").
DEFAULT_N_SEQ_MAX = 24


def default_threads() -> int:
    """The CPUs this process may run on (all four cores of a Raspberry Pi 5)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@dataclasses.dataclass(frozen=True)
class ContextSizes:
    """How big a llama.cpp context is, checked once: callers' mistakes raise here."""

    n_ctx: int = DEFAULT_N_CTX
    n_threads: int = dataclasses.field(default_factory=default_threads)
    n_batch: int = DEFAULT_N_BATCH
    n_ubatch: int = DEFAULT_N_UBATCH
    max_tokens: int = DEFAULT_MAX_TOKENS
    n_seq_max: int = DEFAULT_N_SEQ_MAX
    """Sequences the KV cache holds side by side: the conversation, and short texts kept for
    scoring (see :mod:`edge_agentd.model.side`)."""

    def __post_init__(self) -> None:
        check_count("n_ctx", self.n_ctx, 64)
        check_count("n_threads", self.n_threads, 1)
        check_count("n_batch", self.n_batch, 1)
        check_count("n_ubatch", self.n_ubatch, 1)
        check_count("max_tokens", self.max_tokens, 1)
        check_count("n_seq_max", self.n_seq_max, 1)
        # llama.cpp never runs a micro-batch larger than the batch, and aborts the process when
        # it is asked to keep more sequences than a batch has outputs.
        object.__setattr__(self, "n_ubatch", min(self.n_ubatch, self.n_batch))
        object.__setattr__(self, "n_seq_max", min(self.n_seq_max, self.n_batch))


def kv_cache_bytes(metadata: dict[str, Any], architecture: str | None, n_ctx: int) -> int | None:
    """The size of a full f16 KV cache of ``n_ctx`` tokens, from the GGUF's hyperparameters.

    Per layer, as llama.cpp allocates it: a layer's head count may be a per-layer array, a
    sliding-window layer (``attention.sliding_window_pattern``) has its own head widths
    (``key_length_swa``, Gemma 4), the sliding window is kept at full size (``swa_full``), and
    the last ``attention.shared_kv_layers`` layers reuse earlier layers' cache (Gemma 3n, 4).
    """

    def value(key: str) -> Any:
        return metadata.get(f"{architecture}.{key}")

    def number(key: str) -> int | None:
        found = value(key)
        return found if isinstance(found, int) and not isinstance(found, bool) else None

    def per_layer(key: str, layers: int) -> list[int] | None:
        found = value(key)
        if isinstance(found, list) and len(found) == layers:
            return [int(v) for v in found]
        one = number(key)
        return None if one is None else [one] * layers

    layers = number("block_count")
    heads, width = number("attention.head_count"), number("embedding_length")
    if not layers:
        return None
    kv_heads = per_layer("attention.head_count_kv", layers)
    head_dim = width // heads if width and heads else None
    key_len = number("attention.key_length") or head_dim
    value_len = number("attention.value_length") or head_dim
    if not (kv_heads and key_len and value_len):
        return None
    pattern = value("attention.sliding_window_pattern")
    swa = (
        [bool(v) for v in pattern]
        if isinstance(pattern, list) and len(pattern) == layers
        else [False] * layers
    )
    key_swa = number("attention.key_length_swa") or key_len
    value_swa = number("attention.value_length_swa") or value_len
    shared = min(number("attention.shared_kv_layers") or 0, layers)
    per_token = sum(
        kv_heads[il] * ((key_swa + value_swa) if swa[il] else (key_len + value_len))
        for il in range(layers - shared)
    )
    return n_ctx * per_token * 2


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_N_BATCH",
    "DEFAULT_N_CTX",
    "DEFAULT_N_SEQ_MAX",
    "DEFAULT_N_UBATCH",
    "ContextSizes",
    "default_threads",
    "kv_cache_bytes",
]
