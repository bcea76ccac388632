"""The decoding loop: pick a token (grammar-masked), evaluate it, repeat until the reply ends.

Where the grammar allows only one text next, that text is not sampled: its tokens go through the
model in one batch with the token picked before them, so a forced run costs one model call, as a
prefill does, instead of one call per token. A reply ends at an end-of-generation token (or a
grammar that allows nothing else), a stop string, the token cap or an interruption.
:func:`completion` turns what came out into a :class:`~edge_agent.agent.protocol.Completion`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Container

from edge_agent.agent.events import Usage
from edge_agent.agent.protocol import Completion
from edge_agent.model.constrained import ActionGrammar
from edge_agent.model.kvcache import KVCache
from edge_agent.model.runtime import LlamaRuntime
from edge_agent.model.sampler import Sampler

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
    """Reply tokens the model never evaluated (the last run: nothing needed its logits); the
    next prompt that repeats the reply evaluates them in its own batch."""


def decode_reply(
    runtime: LlamaRuntime,
    cache: KVCache,
    sampler: Sampler,
    grammar: ActionGrammar | None,
    *,
    end_tokens: Container[int],
    stops: tuple[str, ...],
    cap: int,
    temperature: float | None,
    interrupted: Callable[[], bool],
    full_pass: bool = False,
    byte_tokens: list[int] | None = None,
) -> Reply:
    """Sample up to ``cap`` tokens after what ``cache`` holds (its last logits must be current).

    ``grammar`` must already have accepted whatever forced text precedes the reply. With
    ``byte_tokens`` (a token per byte value) the text it forces is taken without sampling.
    """
    encoded_stops = [s.encode() for s in stops if s]
    text = bytearray()
    generated = sampled = forced = 0
    stop = "length"
    run: list[int] = []
    force = grammar is not None and byte_tokens is not None and not full_pass
    while generated < cap:
        logits = cache.last_logits()
        token = sampler.pick(logits, temperature)
        if grammar is not None and (full_pass or not grammar.allows(token)):
            allowed, allowed_logits = grammar.mask(logits, full=full_pass)
            token = sampler.pick(allowed_logits, temperature, allowed)
        if token in end_tokens:
            stop = "stop"
            run = []
            break
        run = [token]
        ends = False
        if grammar is not None:
            grammar.accept(token)
            if force and byte_tokens is not None:
                after = forced_run(runtime, grammar, cap - generated - 1, byte_tokens)
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
            stop = "stop"  # nothing but the end could follow: no need to evaluate the run
            break
        if generated >= cap:
            break
        if interrupted():
            stop = "interrupted"
            break
        cache.evaluate(run)
        run = []
    return Reply(bytes(text), generated, stop, sampled, forced, unevaluated=len(run))


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


__all__ = ["Forced", "Reply", "completion", "decode_reply", "forced_run"]
