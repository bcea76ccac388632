"""The decoding loop: pick a token (grammar-masked), evaluate it, repeat until the reply ends.

Where the grammar allows only one text next, that text is not sampled: its tokens go through the
model in one batch with the token picked before them, so a forced run costs one model call, as a
prefill does, instead of one call per token. A reply ends at an end-of-generation token (or a
grammar that allows nothing else), a stop string, the token cap or an interruption.
:func:`completion` turns what came out into a :class:`~edge_agentd.agent.protocol.Completion`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Container

import numpy as np
import numpy.typing as npt

from edge_agentd.agent.events import Usage
from edge_agentd.agent.protocol import Completion
from edge_agentd.model.constrained import ActionGrammar
from edge_agentd.model.kvcache import KVCache
from edge_agentd.model.runtime import LlamaRuntime
from edge_agentd.model.sampler import Sampler

# A forced run is looked for up to this many bytes per token still allowed.
_BYTES_PER_TOKEN = 16


@dataclasses.dataclass(frozen=True)
class Forced:
    """Text the grammar allowed alone, already accepted by it, and its tokens."""

    text: bytes
    tokens: list[int]
    ends: bool
    """The grammar allows only the end of the reply after it."""


def forced_run(
    runtime: LlamaRuntime, grammar: ActionGrammar, budget: int, byte_tokens: list[int]
) -> Forced:
    """What the grammar forces next, as at most ``budget`` tokens."""
    if budget <= 0:
        return Forced(b"", [], False)
    text, ends = grammar.forced(budget * _BYTES_PER_TOKEN)
    tokens = runtime.exact_tokens(text, byte_tokens) if text else []
    if len(tokens) > budget:
        # The cap cuts the run: the reply ends there, so the grammar having read further is moot.
        tokens = tokens[:budget]
        text = b"".join(runtime.piece(t) for t in tokens)
        ends = False
    return Forced(text, tokens, ends)


@dataclasses.dataclass(frozen=True)
class Reply:
    """What one decoding loop produced."""

    text: bytes
    generated: int
    """Tokens in the reply after the prompt, whether sampled or forced."""
    stop: str
    sampled: int = 0
    """Tokens the sampler picked: each cost one model call."""
    forced: int = 0
    """Tokens the grammar forced, taken without sampling and evaluated in batches."""
    lead: int = 0
    """Forced tokens at the very start, evaluated with the prompt (counted as prompt tokens)."""
    unevaluated: int = 0
    """Reply tokens the model never evaluated (a last run cut by the cap or a stop string);
    the next prompt that repeats the reply evaluates them in its own batch."""
    pending: tuple[int, ...] = ()
    """Those tokens themselves, so the next prompt can keep the reply's own token ids."""


_NOTHING = Forced(b"", [], False)


@dataclasses.dataclass
class Decoder:
    """How a reply is decoded after its prompt: the grammar is asked about the sampled token
    first and masks the vocabulary only when it says no, and text it allows alone is taken
    without sampling, in one batch. :class:`~edge_agentd.model.llama.LlamaModel` holds one; the
    benchmarks swap in the ways it is compared with (scripts/bench/decoders.py)."""

    runtime: LlamaRuntime
    cache: KVCache
    sampler: Sampler
    end_tokens: Container[int]
    stops: tuple[str, ...]
    byte_tokens: list[int]
    """A token per byte value, to spell forced text exactly."""

    def lead(self, grammar: ActionGrammar | None, budget: int) -> Forced:
        """What the grammar forces at the very start (nothing without one), accepted by it."""
        return self.forced_after(grammar, budget)

    def forced_after(self, grammar: ActionGrammar | None, budget: int) -> Forced:
        """What the grammar forces next, as at most ``budget`` tokens, accepted by it."""
        if grammar is None:
            return _NOTHING
        return forced_run(self.runtime, grammar, budget, self.byte_tokens)

    def choose(
        self,
        grammar: ActionGrammar | None,
        logits: npt.NDArray[np.float32],
        temperature: float | None,
    ) -> int:
        """The next token: the sampler's pick, or, where the grammar refuses it, the best it
        allows."""
        token = self.sampler.pick(logits, temperature)
        if grammar is not None and not grammar.allows(token):
            allowed, allowed_logits = grammar.mask(logits)
            token = self.sampler.pick(allowed_logits, temperature, allowed)
        return token

    def reply(
        self,
        grammar: ActionGrammar | None,
        *,
        cap: int,
        temperature: float | None,
        interrupted: Callable[[], bool],
    ) -> Reply:
        """Decode up to ``cap`` tokens after what the cache holds (its last logits must be
        current). ``grammar`` must already have accepted whatever forced text precedes the
        reply."""
        runtime, cache = self.runtime, self.cache
        encoded_stops = [s.encode() for s in self.stops if s]
        text = bytearray()
        generated = sampled = forced = 0
        stop = "length"
        run: list[int] = []
        while generated < cap:
            token = self.choose(grammar, cache.last_logits(), temperature)
            if token in self.end_tokens:
                stop = "stop"
                run = []
                break
            run = [token]
            ends = False
            if grammar is not None:
                grammar.accept(token)
                after = self.forced_after(grammar, cap - generated - 1)
                run += after.tokens
                forced += len(after.tokens)
                ends = after.ends
            sampled += 1
            generated += len(run)
            start = len(text)
            for each in run:
                text += runtime.piece(each)
            if encoded_stops and len(text) > start:
                hit = min((i for s in encoded_stops if (i := text.find(s)) >= 0), default=-1)
                if hit >= 0:
                    del text[hit:]
                    stop = "stop"
                    break
            if ends:
                # Nothing but the end can follow. The run still goes into the cache, in one
                # batch: the next step's prompt repeats the reply, and finds all of it there.
                stop = "stop" if cache.evaluate(run, interrupted) else "interrupted"
                run = [] if stop == "stop" else run
                break
            if generated >= cap:
                break
            if interrupted() or not cache.evaluate(run, interrupted):
                stop = "interrupted"
                break
            run = []
        return Reply(
            bytes(text), generated, stop, sampled, forced, unevaluated=len(run), pending=tuple(run)
        )


def completion(
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


__all__ = ["Decoder", "Forced", "Reply", "completion", "forced_run"]
