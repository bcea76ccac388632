"""A Gemma GGUF kept resident through llama.cpp, that never re-reads what it has already seen.

:class:`LlamaModel` owns its parts, each with its own state: the runtime (llama.cpp's pointers,
:mod:`~edge_agentd.model.runtime`), the KV cache (which tokens the context holds,
:mod:`~edge_agentd.model.kvcache`), the sampler and the grammar cache. Each prompt is tokenized and
only the tokens after the longest prefix already cached are evaluated: across the steps of one run
(the prompt only grows) and across runs (the system part is byte-identical). Gemma's sliding
window cache is only safe to cut back partially at full size, hence ``swa_full=True``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from edge_agentd.agent.checks import check_count
from edge_agentd.agent.prompt import ChatFormat
from edge_agentd.agent.protocol import Completion, ContextExceeded, TokenCounts
from edge_agentd.model.constrained import BadPrefix, GrammarCache
from edge_agentd.model.continuation import Continuation
from edge_agentd.model.counting import ThreadCounts
from edge_agentd.model.decoding import Decoder, Reply, completion
from edge_agentd.model.formats import choose_format, hygiene
from edge_agentd.model.gguf import ModelLoadError, read_gguf
from edge_agentd.model.grammars import grammar_of
from edge_agentd.model.kvcache import KVCache
from edge_agentd.model.prefixstate import load_prefix, model_prefix_state
from edge_agentd.model.runtime import DecodeFailed, LlamaRuntime, ModelClosed, trim_heap
from edge_agentd.model.sampler import Sampler
from edge_agentd.model.side import SideTexts
from edge_agentd.model.sizing import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_BATCH,
    DEFAULT_N_CTX,
    DEFAULT_N_SEQ_MAX,
    DEFAULT_N_UBATCH,
    ContextSizes,
    default_threads,
    kv_cache_bytes,
)
from edge_agentd.model.stopping import CallStops, Interrupted, StopWatch, stop_check


def _release(grammars: GrammarCache, runtime: LlamaRuntime, watch: StopWatch) -> None:
    # Grammars hold the vocabulary's pointer: free them before the model itself.
    watch.close()
    grammars.close()
    runtime.close()


class LlamaModel:
    """A resident GGUF model; implements :class:`edge_agentd.agent.protocol.ModelHandle`.

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
        n_seq_max: int = DEFAULT_N_SEQ_MAX,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        seed: int = 0,
        chat_format: ChatFormat | None = None,
        sha256: str | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        verbose: bool = False,
    ) -> None:
        sizes = ContextSizes(
            n_ctx=n_ctx,
            n_threads=default_threads() if n_threads is None else n_threads,
            n_batch=n_batch,
            n_ubatch=n_ubatch,
            n_seq_max=n_seq_max,
            max_tokens=max_tokens,
        )
        if chat_format is not None and not isinstance(chat_format, ChatFormat):
            raise TypeError(f"chat_format must be a ChatFormat, not {type(chat_format).__name__}")
        self.path = Path(path)
        gguf = read_gguf(self.path)
        self.sizes = sizes
        self.architecture = gguf.architecture
        fmt = chat_format or choose_format(
            gguf.architecture, gguf.chat_template, source=str(self.path)
        )
        self.kv_cache_bytes = kv_cache_bytes(gguf.metadata, gguf.architecture, sizes.n_ctx)
        self._facts = {"name": gguf.name, "file_size_bytes": gguf.size_bytes, "sha256": sha256}
        self._runtime = LlamaRuntime(self.path, gguf, sizes, verbose=verbose)
        # Prompt hygiene (docs/design.md, "Decisions"): of all the control tokens in the
        # vocabulary only the format's own markers (turns, tool blocks) are read as such, and
        # the same text written by anyone else (a question, a result, the reply) is defused.
        self.chat_format, self._markers = hygiene(fmt, self._runtime.control_tokens_in)
        self._cache = KVCache(self._runtime)
        self._continuation = Continuation(self._runtime, self._markers)
        self._side = SideTexts(self._runtime)
        self._byte_tokens = self._runtime.byte_tokens()
        self._grammars = GrammarCache(
            self._runtime.vocab,
            self._runtime.n_vocab,
            byte_tokens=self._byte_tokens,
            end_token=self._runtime.end_token,
            to_gbnf=grammar_of(fmt.calls),
        )
        self._stops = CallStops(self._runtime.abort)
        self._finalizer = weakref.finalize(
            self, _release, self._grammars, self._runtime, self._stops.watch
        )
        self.decoder = Decoder(
            self._runtime,
            self._cache,
            Sampler(temperature, seed),
            self._runtime.end_of_generation(self.chat_format.stop),
            self.chat_format.stop,
            self._byte_tokens,
        )
        """How replies are decoded (a part of its own, so a benchmark can swap it)."""
        self._lock = threading.Lock()
        self._counts = ThreadCounts()
        """Each run thread's own token counts: a step takes them when it ends."""
        self._prefix_state = (
            None
            if state_dir is None
            else model_prefix_state(state_dir, self.path, sha256, sizes, self.kv_cache_bytes)
        )

    def __enter__(self) -> LlamaModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- facts ----------------------------------------------------------------------------------

    @property
    def n_ctx(self) -> int:
        return self.sizes.n_ctx

    @property
    def n_threads(self) -> int:
        return self.sizes.n_threads

    @property
    def max_tokens(self) -> int:
        return self.sizes.max_tokens

    @property
    def uses_action_schema(self) -> bool:
        """Replies are decoded under the action schema's grammar (unless a call turns it off)."""
        return True

    @property
    def info(self) -> dict[str, Any]:
        """What the daemon's ``status`` reports about the model."""
        return {
            "path": str(self.path),
            "name": self._facts["name"],
            "architecture": self.architecture,
            "chat_format": self.chat_format.name,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "file_size_bytes": self._facts["file_size_bytes"],
            "sha256": self._facts["sha256"],
            "swa_full": True,
            "kv_cache_bytes": self.kv_cache_bytes,
            "cached_tokens": len(self._cache),
            "prefix_state": None if self._prefix_state is None else self._prefix_state.status,
        }

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Free llama.cpp's model and context; later calls raise :class:`ModelClosed`."""
        with self._lock:
            self._finalizer()
            self._cache.tokens = []

    def _check_open(self) -> None:
        if self.closed:
            raise ModelClosed("the model has been closed")

    def tokenize(self, text: str, *, add_bos: bool = True) -> list[int]:
        """The tokens of a prompt: its format's turn markers (``<start_of_turn>``) become control
        tokens, and everything else is plain text, ``</s>`` or ``<unused0>`` included."""
        with self._lock:
            self._check_open()
            return self._prompt_tokens(text, add_bos=add_bos)

    def _prompt_tokens(self, text: str, *, add_bos: bool = True) -> list[int]:
        return self._runtime.tokenize(text, add_bos=add_bos, markers=self._markers)

    def take_tokens(self) -> TokenCounts:
        """What this thread's calls evaluated, scored, forced and sampled since it last asked."""
        return self._counts.take()

    # -- the cache ------------------------------------------------------------------------------

    def warm_up(self, preamble: str) -> None:
        """Evaluate ``preamble`` (the prompt prefix every request shares) into the cache now."""
        if not isinstance(preamble, str):
            raise TypeError(f"warm_up takes a str, not {type(preamble).__name__}")
        with self._lock:
            self._check_open()
            tokens = self._prompt_tokens(preamble)
            # A shared prefix that leaves no room for a reply makes every request fail: say so now.
            if len(tokens) + self.max_tokens > self.n_ctx:
                raise ContextExceeded(len(tokens), self.n_ctx)
            keep = self._cache.reuse([*tokens, -1])
            if keep == len(tokens):
                return
            state = self._prefix_state
            if state is not None and load_prefix(state, self._runtime, self._cache, tokens):
                return
            self._cache.evaluate(tokens[keep:])
            if state is not None and state.status != "saved":
                state.write(tokens, self._runtime.save_state())
            trim_heap()

    def interruptible(
        self, deadline: float | None = None, should_stop: Callable[[], bool] | None = None
    ) -> contextlib.AbstractContextManager[None]:
        """Every call this thread makes in the block stops inside llama.cpp once ``deadline``
        passes or ``should_stop()`` is true: ``generate`` ends its reply ``interrupted``,
        ``score`` and ``likelihood`` raise :class:`Interrupted`."""
        return self._stops.during(stop_check(deadline, should_stop))

    def reset(self) -> None:
        """Nothing to forget between runs: the KV cache is kept on purpose."""

    def forget(self) -> None:
        """Empty the cache, so the next prompt is evaluated from scratch (for comparisons)."""
        with self._lock:
            self._check_open()
            self._cache.clear()

    # -- generation -----------------------------------------------------------------------------

    def generate(
        self,
        prompt: str,
        *,
        action_schema: dict[str, Any] | None = None,
        constrained: bool = True,
        prefix: str = "",
        deadline: float | None = None,
        should_stop: Callable[[], bool] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        **_ignored: Any,
    ) -> Completion:
        """The model's reply to ``prompt``, up to the end of its turn or ``max_tokens`` tokens.

        With ``action_schema`` (and ``constrained`` left on) the reply follows that JSON schema.
        ``prefix`` is text the reply starts with: it is evaluated like the prompt (the grammar
        must allow it) and the model writes the rest. ``deadline`` (a ``time.monotonic()``
        instant) and ``should_stop`` (else those of :meth:`interruptible`) are checked between
        tokens and inside llama.cpp; either ends the reply with ``usage.stop == "interrupted"``.
        Raises :class:`ContextExceeded` when the prompt leaves no room for ``max_tokens``. Text
        the grammar allows alone is taken without sampling and evaluated in one batch
        (:class:`~edge_agentd.model.decoding.Decoder`).
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
        cap = self.max_tokens if max_tokens is None else check_count("max_tokens", max_tokens)
        check = stop_check(deadline, should_stop) or self._stops.current
        interrupted = check or (lambda: False)
        with self._lock, self._stops.watching(check):
            self._check_open()
            runtime = self._runtime
            forced = runtime.tokenize(prefix, add_bos=False) if prefix else []
            # The last reply's own tokens where the prompt repeats it (model/continuation.py).
            conversation = self._continuation.tokenize(prompt) or [runtime.bos]
            tokens = conversation + forced
            if len(tokens) + cap > self.n_ctx:
                raise ContextExceeded(len(tokens), self.n_ctx)
            self._make_room(len(tokens) + cap)
            grammar = (
                self._grammars.get(action_schema)
                if constrained and action_schema is not None
                else None
            )
            if grammar is not None:
                grammar.reset()
                grammar.start_with(forced, prefix)
            # Text the grammar forces at the start is evaluated with the prompt, and counted
            # with it, as a prefix is: the cap is for the tokens after it.
            lead = self.decoder.lead(grammar, self.n_ctx - len(tokens) - cap)
            tokens += lead.tokens
            head = prefix.encode() + lead.text
            started = time.perf_counter()
            keep = self._cache.reuse(tokens)

            def done(
                text: bytes, prefilled: float | None, stop: str, reply: Reply | None = None
            ) -> Completion:
                n_prompt, evaluated = len(tokens), len(tokens) - keep
                reply = reply or Reply(b"", 0, stop)
                generated, cached = reply.generated, self._cache.tokens
                if stop != "interrupted" and cached[: len(tokens)] == tokens:
                    spelled = [*tokens[len(conversation) :], *cached[len(tokens) :], *reply.pending]
                    self._continuation.keep(prompt, conversation, text, spelled)
                self._counts.add(
                    prompt=n_prompt, evaluated=evaluated, generated=generated,
                    forced=reply.forced, sampled=reply.sampled,
                )  # fmt: skip
                return completion(
                    text,
                    n_prompt,
                    evaluated,
                    generated,
                    started=started,
                    prefill_done=prefilled,
                    stop=stop,
                )

            if not self._cache.evaluate(tokens[keep:], interrupted):
                return done(head, None, "interrupted")
            prefill_done = time.perf_counter()
            if lead.ends:
                return done(head, prefill_done, "stop")
            reply = self.decoder.reply(
                grammar, cap=cap, temperature=temperature, interrupted=interrupted
            )
            return done(head + reply.text, prefill_done, reply.stop, reply)

    def score(
        self, prompt: str, continuations: Sequence[str], *, whole: bool = False
    ) -> list[list[float]]:
        """For each continuation, were it the reply's start, the log-probability of each of its
        tokens up to the first one that tells it apart from the others (the sum is the chance
        that the reply takes its branch); with ``whole``, of each of its tokens (the sum is its
        likelihood as the reply's start).

        The prompt is evaluated once (its cached prefix reused, as for ``generate``); the tokens
        the continuations share are evaluated once each and cut away again.
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        with self._lock, self._stops.watching(None):
            self._check_open()
            runtime = self._runtime
            tokens = self._continuation.tokenize(prompt) or [runtime.bos]
            pieces = [runtime.tokenize(text, add_bos=False) for text in continuations]
            longest = max((len(p) for p in pieces), default=0)
            if len(tokens) + longest + 1 > self.n_ctx:
                raise ContextExceeded(len(tokens) + longest, self.n_ctx)
            self._make_room(len(tokens) + longest + 1)
            keep = self._cache.reuse(tokens)
            self._cache.evaluate(tokens[keep:])  # a stop inside raises Interrupted
            before = runtime.decoded
            try:
                return self._cache.score_branches(pieces, whole=whole)
            finally:
                scored = runtime.decoded - before
                self._counts.add(prompt=len(tokens), evaluated=len(tokens) - keep, scored=scored)

    def likelihood(self, prompts: Sequence[str], text: str) -> list[float]:
        """log P(text | prompt) for each prompt, each a conversation of its own.

        The prompts are kept in the cache beside the conversation, so a prompt scored again
        (a skill's fixed description) costs only the text's tokens.
        """
        if not isinstance(text, str) or not all(isinstance(p, str) for p in prompts):
            raise TypeError("likelihood takes a list of prompt strings and a text string")
        with self._lock, self._stops.watching(None):
            self._check_open()
            runtime = self._runtime
            tokenized = [self._prompt_tokens(p) or [runtime.bos] for p in prompts]
            text_tokens = runtime.tokenize(text, add_bos=False)
            longest = max((len(t) for t in tokenized), default=0) + len(text_tokens)
            if longest + len(self._cache) > self.n_ctx:
                raise ContextExceeded(longest, self.n_ctx - len(self._cache))
            return self._side.likelihoods(tokenized, text_tokens, (self._counts, longest))

    def _make_room(self, needed: int) -> None:
        """Free the kept side texts when the conversation needs their cells."""
        if needed + self._side.cells > self.n_ctx:
            self._side.drop_all()


__all__ = [
    "BadPrefix",
    "DecodeFailed",
    "Interrupted",
    "LlamaModel",
    "ModelClosed",
    "ModelLoadError",
    "default_threads",
]
