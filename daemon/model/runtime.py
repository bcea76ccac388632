"""llama.cpp's model and context: loaded and checked once, freed exactly once.

:class:`LlamaRuntime` owns the C pointers and what is read from them: the vocabulary, the
tokenizer, the end-of-generation tokens, and the one batch call everything else goes through.
It keeps no record of what has been evaluated; that is :class:`~edge_agentd.model.kvcache.KVCache`.
"""

from __future__ import annotations

import ctypes
import functools
import re
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edge_agentd.agent.protocol import ModelError
from edge_agentd.model import llamalog
from edge_agentd.model.bindings import llama_cpp
from edge_agentd.model.gguf import GGUFInfo, ModelLoadError
from edge_agentd.model.pages import drop_file_pages, trim_heap
from edge_agentd.model.sizing import ContextSizes
from edge_agentd.model.stopping import AbortFlag, Interrupted

_PIECE_BUFFER = 64
_CONTROL = int(llama_cpp.LLAMA_TOKEN_ATTR_CONTROL)


class ModelClosed(ModelError):
    """The model was closed; the daemon is shutting down."""

    code = "model_closed"


class DecodeFailed(ModelError):
    """llama.cpp could not evaluate a batch of tokens."""

    code = "decode_failed"


def extra_buffers_safe(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether llama.cpp may put weights in its extra CPU buffer types (repacked or AMX).

    On a CPU with Intel AMX, a native build routes matrix products through ggml's AMX kernels,
    which crash (SIGSEGV in ``ggml_backend_amx_mul_mat``) on the embedded Gemma's quantized
    weights. There the extra buffers are turned off; everywhere else (a Raspberry Pi's repacked
    ARM kernels included) they stay on, as llama.cpp's default.
    """
    try:
        text = cpuinfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return not any(
        line.startswith("flags") and "amx_tile" in line.split() for line in text.splitlines()
    )


@functools.lru_cache(maxsize=8)
def _marker_split(markers: tuple[str, ...]) -> re.Pattern[str]:
    """A pattern whose split() keeps each marker as a piece of its own (longest first)."""
    ordered = sorted(markers, key=len, reverse=True)
    return re.compile("(" + "|".join(re.escape(marker) for marker in ordered) + ")")


def _free(model: Any, context: Any, batch: Any) -> None:
    if batch is not None:
        llama_cpp.llama_batch_free(batch)
    if context:
        llama_cpp.llama_free(context)
    if model:
        llama_cpp.llama_model_free(model)


class EndTokens:
    """The tokens that end a reply: those llama.cpp calls end-of-generation, asked one token at
    a time as the decoder meets them (not listed up front, which is a pass over the whole
    vocabulary at every start), and the format's one-token stop strings."""

    def __init__(self, runtime: LlamaRuntime, extra: frozenset[int]) -> None:
        self._runtime = runtime
        self._extra = extra

    def __contains__(self, token: object) -> bool:
        runtime = self._runtime
        if not isinstance(token, int) or not 0 <= token < runtime.n_vocab:
            return False
        if token in self._extra:
            return True
        # The vocabulary is freed with the model: a closed model ends nothing.
        return not runtime.closed and bool(llama_cpp.llama_vocab_is_eog(runtime.vocab, token))


class LlamaRuntime:
    """A loaded GGUF model and its llama.cpp context, freed by :meth:`close` or when collected."""

    def __init__(
        self, path: Path, gguf: GGUFInfo, sizes: ContextSizes, *, verbose: bool = False
    ) -> None:
        self.path = path
        self.sizes = sizes
        llamalog.install()  # llama.cpp's lines into the daemon's log, its errors as errors
        llamalog.LLAMA_LOG.verbose = verbose
        llamalog.LLAMA_LOG.forget_errors()
        llama_cpp.llama_backend_init()
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = 0
        model_params.use_extra_bufts = extra_buffers_safe()
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), model_params)
        if not model:
            reason = llamalog.LLAMA_LOG.first_error
            raise ModelLoadError(
                f"llama.cpp could not load {path} (architecture {gguf.architecture!r})"
                + (f": {reason}" if reason else "")
                + ". "
                "Check that the file is a complete GGUF of a model this llama.cpp supports, "
                "or omit the path to use the embedded default model."
            )
        context_params = llama_cpp.llama_context_default_params()
        context_params.n_ctx = sizes.n_ctx
        context_params.n_batch = sizes.n_batch
        context_params.n_ubatch = sizes.n_ubatch
        context_params.n_seq_max = sizes.n_seq_max
        # One pool of n_ctx cells for all sequences: the conversation is never squeezed into
        # n_ctx / n_seq_max cells.
        context_params.kv_unified = True
        context_params.n_threads = sizes.n_threads
        context_params.n_threads_batch = sizes.n_threads
        # A partial cut-back of Gemma's sliding-window cache is only correct at full size.
        context_params.swa_full = True
        context_params.no_perf = True
        context = llama_cpp.llama_init_from_model(model, context_params)
        if not context:
            llama_cpp.llama_model_free(model)
            raise ModelLoadError(
                f"llama.cpp could not create a context of {sizes.n_ctx} tokens for {path}; "
                "try a smaller n_ctx (is there enough memory?)"
            )
        self._model: Any = model
        self._context: Any = context
        self._vocab: Any = llama_cpp.llama_model_get_vocab(model)
        self._memory: Any = llama_cpp.llama_get_memory(context)
        # One batch with a logits flag per token, so a run of tokens can be scored in one call.
        self._batch: Any = llama_cpp.llama_batch_init(sizes.n_batch, 0, 1)
        self._finalizer = weakref.finalize(self, _free, model, context, self._batch)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self.vocab: Any = self._vocab
        """llama.cpp's vocabulary pointer, for grammars built on this model."""
        self._add_bos = bool(llama_cpp.llama_vocab_get_add_bos(self._vocab))
        self.bos = int(llama_cpp.llama_vocab_bos(self._vocab))
        eot = int(llama_cpp.llama_vocab_eot(self._vocab))
        self.end_token = eot if eot >= 0 else int(llama_cpp.llama_vocab_eos(self._vocab))
        """The vocabulary's end-of-turn (else end-of-sequence) token."""
        self._piece = ctypes.create_string_buffer(_PIECE_BUFFER)
        self.abort = AbortFlag(context)
        """Raised to stop the decode in progress between two of its graph's steps."""
        trim_heap()
        # The repacked weights' originals were read once, into their copies (model/pages.py).
        drop_file_pages(path)
        self.clears = 0
        """How often the whole cache was emptied: sequences kept for scoring check it."""
        self.decoded = 0
        """Tokens run through the model so far, every sequence: what each call cost is the
        difference (``usage``'s scored tokens are counted so)."""

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Free llama.cpp's model and context; later calls raise :class:`ModelClosed`."""
        self._finalizer()

    # -- tokens ---------------------------------------------------------------------------------

    def tokenize(
        self, text: str, *, add_bos: bool = True, markers: Sequence[str] = ()
    ) -> list[int]:
        """The tokens of ``text`` read as plain text, except each occurrence of a string in
        ``markers`` (a chat format's own turn markers), which becomes its control token.

        So ``</s>``, ``<unused0>`` or ``<start_of_turn>`` written in a question, a skill's result
        or a reply is never a control token: only the markers the prompt's template put there
        are (docs/design.md, "Decisions": prompt hygiene). The text between markers is tokenized
        piece by piece, as llama.cpp itself does around the special tokens it finds.
        """
        markers = tuple(marker for marker in markers if marker)
        if not markers:
            return self._tokenize(text, add_bos, parse_special=False)
        tokens: list[int] = []
        bos = add_bos
        for index, piece in enumerate(_marker_split(markers).split(text)):
            if piece:
                # split() with one group: the odd pieces are the markers themselves.
                tokens += self._tokenize(piece, bos, parse_special=index % 2 == 1)
                bos = False
        return tokens if not bos else self._tokenize("", bos, parse_special=False)

    def _tokenize(self, text: str, add_bos: bool, *, parse_special: bool) -> list[int]:
        data = text.encode("utf-8", errors="replace")
        bos = add_bos and self._add_bos
        # Power-of-two sizes: ctypes keeps every array type it makes, so sizes must not vary freely.
        capacity = 1 << (len(data) + 1).bit_length()
        buffer = (llama_cpp.llama_token * capacity)()
        count = llama_cpp.llama_tokenize(
            self._vocab, data, len(data), buffer, capacity, bos, parse_special
        )
        if count < 0:
            capacity = 1 << (-count - 1).bit_length()
            buffer = (llama_cpp.llama_token * capacity)()
            count = llama_cpp.llama_tokenize(
                self._vocab, data, len(data), buffer, capacity, bos, parse_special
            )
            if count < 0:
                raise ModelError(f"llama.cpp could not tokenize a text of {len(data)} bytes")
        return list(buffer[:count])

    def piece(self, token: int) -> bytes:
        """The bytes of one token as it appears in text."""
        n = llama_cpp.llama_token_to_piece(self._vocab, token, self._piece, _PIECE_BUFFER, 0, False)
        if n < 0:
            big = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self._vocab, token, big, -n, 0, False)
            return big.raw[:n]
        return self._piece.raw[:n]

    def byte_tokens(self) -> list[int]:
        """For each byte value, a token that is that one byte (-1 where the vocabulary has none).

        The tokenizer is asked first. A byte-level BPE tokenizer (GPT-2's kind) reads a lone
        byte over 0x7f as an invalid character and gives the replacement character's token, yet
        its vocabulary has a token for every byte: those are found by reading the pieces.
        """
        found = []
        buffer = (llama_cpp.llama_token * 4)()
        for value in range(256):
            data = bytes([value])
            count = llama_cpp.llama_tokenize(self._vocab, data, 1, buffer, 4, False, False)
            token = int(buffer[0]) if count == 1 else -1
            found.append(token if token >= 0 and self.piece(token) == data else -1)
        if -1 in found[1:]:
            self._single_byte_pieces(found)
        return found

    def _single_byte_pieces(self, found: list[int]) -> None:
        """Fill the bytes ``found`` lacks with tokens whose piece is that byte alone (a pass over
        the vocabulary, made only for the tokenizers that need it)."""
        missing = found.count(-1)
        for token in range(self.n_vocab):
            piece = self.piece(token)  # a control token's piece is empty
            if len(piece) == 1 and found[piece[0]] < 0:
                found[piece[0]] = token
                missing -= 1
                if not missing:
                    return

    def exact_tokens(self, data: bytes, byte_tokens: list[int]) -> list[int]:
        """Tokens whose pieces join to exactly ``data``: the tokenizer's, when they do, else
        one token per byte (a cut UTF-8 character's bytes are always sent one at a time)."""
        tokens: list[int] = []
        whole = 0
        for cut in range(min(4, len(data) + 1)):  # a UTF-8 character is at most four bytes
            try:
                text = data[: len(data) - cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            whole = len(data) - cut
            tokens = self.tokenize(text, add_bos=False) if text else []
            break
        if b"".join(self.piece(t) for t in tokens) != data[:whole]:
            tokens, whole = [], 0
        tail = [byte_tokens[b] for b in data[whole:]]
        if any(t < 0 for t in tail):
            raise ModelError(f"no token spells the bytes {data[whole:]!r}")
        return tokens + tail

    def end_of_generation(self, stops: tuple[str, ...]) -> EndTokens:
        """The tokens that end a reply: the vocabulary's own, and each one-token stop string."""
        extra = set()
        for stop in stops:
            tokens = self.tokenize(stop, add_bos=False, markers=(stop,))
            if len(tokens) == 1:
                extra.add(tokens[0])
        return EndTokens(self, frozenset(extra))

    def control_tokens_in(self, texts: Iterable[str]) -> list[str]:
        """The text of each control token (turn markers, ``</s>``, ``<unused0>``...) that
        llama.cpp's tokenizer finds in ``texts`` when it reads them as a template does.

        A few tokenizer calls: listing every control token of the vocabulary instead was a pass
        over all 262k tokens at every start (0.13 s of a 1 s warm restart).
        """
        found: dict[str, None] = {}
        for text in texts:
            if not text:
                continue
            for token in self._tokenize(text, False, parse_special=True):
                if llama_cpp.llama_vocab_get_attr(self._vocab, token) & _CONTROL:
                    piece = llama_cpp.llama_vocab_get_text(self._vocab, token)
                    if piece:
                        found[piece.decode("utf-8", errors="replace")] = None
        return list(found)

    # -- evaluation -----------------------------------------------------------------------------

    def decode(
        self, tokens: list[int], start: int, *, all_logits: bool = False, seq: int = 0
    ) -> None:
        """Evaluate ``tokens`` at positions ``start...`` of sequence ``seq``, at most n_batch of
        them; the logits of the last (or, with ``all_logits``, of every) token can then be read."""
        self.decode_runs([(seq, start, tokens)], all_logits=all_logits)

    def decode_runs(
        self, runs: list[tuple[int, int, list[int]]], *, all_logits: bool = False
    ) -> None:
        """Evaluate several (sequence, start position, tokens) runs in one batch of at most
        n_batch tokens. Logits come out in the batch's order: every token's with
        ``all_logits``, else only the last one's. More than n_batch tokens raise
        :class:`DecodeFailed` before anything is written: the batch's arrays hold n_batch."""
        total = sum(len(tokens) for _, _, tokens in runs)
        if total > self.sizes.n_batch:
            raise DecodeFailed(
                f"{total} tokens do not fit in one batch of {self.sizes.n_batch}; "
                "the caller must split them"
            )
        batch = self._batch
        count = 0
        for seq, start, tokens in runs:
            for offset, token in enumerate(tokens):
                batch.token[count] = token
                batch.pos[count] = start + offset
                batch.n_seq_id[count] = 1
                batch.seq_id[count][0] = seq
                batch.logits[count] = all_logits
                count += 1
        if count:
            batch.logits[count - 1] = True
        batch.n_tokens = count
        self.decoded += count
        status = llama_cpp.llama_decode(self._context, batch)
        if status == 2:
            # Stopped between two graph steps: llama.cpp dropped the batch's last micro-batch
            # but keeps any earlier one; drop them all, so the cache is what it was before.
            for seq, start, _ in runs:
                self.forget_from(start, seq)
            raise Interrupted(f"the model was stopped while it evaluated {count} tokens")
        if status != 0:
            raise DecodeFailed(f"llama.cpp failed to evaluate {count} tokens ({status})")

    def logits(self, index: int = -1) -> npt.NDArray[np.float32]:
        """The logits after the ``index``-th token of the last batch (-1: its last)."""
        pointer = llama_cpp.llama_get_logits_ith(self._context, index)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def forget_from(self, position: int, seq: int = 0) -> bool:
        """Drop sequence ``seq`` from ``position`` on; False if llama.cpp cannot cut there."""
        return bool(llama_cpp.llama_memory_seq_rm(self._memory, seq, position, -1))

    def save_state(self) -> bytes:
        """The conversation's (sequence 0's) cached keys and values, as llama.cpp writes them."""
        size = int(llama_cpp.llama_state_seq_get_size(self._context, 0))
        buffer = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_seq_get_data(self._context, buffer, size, 0))
        return bytes(memoryview(buffer)[:written])

    def load_state(self, data: bytes) -> bool:
        """Replace sequence 0's cache with ``data`` from :meth:`save_state`; False if llama.cpp
        refused it (the cache is then empty)."""
        self.forget_all()
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        read = int(llama_cpp.llama_state_seq_set_data(self._context, buffer, len(data), 0))
        if read != len(data):
            self.forget_all()
            return False
        return True

    def forget_all(self) -> None:
        """Empty the whole cache, every sequence."""
        llama_cpp.llama_memory_clear(self._memory, True)
        self.clears += 1


__all__ = [
    "DecodeFailed",
    "LlamaRuntime",
    "ModelClosed",
    "extra_buffers_safe",
    "trim_heap",
]
