"""The decoding loop: pick a token (grammar-masked), evaluate it, repeat until the reply ends.

A reply ends at an end-of-generation token, a stop string, the token cap or an interruption.
:func:`completion` turns what came out into a :class:`~edge_agent.agent.protocol.Completion`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from edge_agent.agent.events import Usage
from edge_agent.agent.protocol import Completion
from edge_agent.model.constrained import ActionGrammar
from edge_agent.model.kvcache import KVCache
from edge_agent.model.runtime import LlamaRuntime
from edge_agent.model.sampler import Sampler


@dataclasses.dataclass(frozen=True)
class Reply:
    """What one decoding loop produced."""

    text: bytes
    generated: int
    stop: str


def decode_reply(
    runtime: LlamaRuntime,
    cache: KVCache,
    sampler: Sampler,
    grammar: ActionGrammar | None,
    *,
    end_tokens: frozenset[int],
    stops: tuple[str, ...],
    cap: int,
    temperature: float | None,
    interrupted: Callable[[], bool],
    full_pass: bool = False,
) -> Reply:
    """Sample up to ``cap`` tokens after what ``cache`` holds (its last logits must be current).

    ``grammar`` must already have accepted whatever forced text precedes the reply.
    """
    encoded_stops = [s.encode() for s in stops if s]
    text = bytearray()
    generated = 0
    stop = "length"
    while generated < cap:
        logits = cache.last_logits()
        token = sampler.pick(logits, temperature)
        if grammar is not None and (full_pass or not grammar.allows(token)):
            allowed, allowed_logits = grammar.mask(logits, full=full_pass)
            token = sampler.pick(allowed_logits, temperature, allowed)
        if token in end_tokens:
            stop = "stop"
            break
        if grammar is not None:
            grammar.accept(token)
        generated += 1
        piece = runtime.piece(token)
        text += piece
        if piece and encoded_stops:
            hit = min((i for s in encoded_stops if (i := text.find(s)) >= 0), default=-1)
            if hit >= 0:
                del text[hit:]
                stop = "stop"
                break
        if generated >= cap:
            break
        if interrupted():
            stop = "interrupted"
            break
        cache.evaluate([token])
    return Reply(bytes(text), generated, stop)


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


__all__ = ["Reply", "completion", "decode_reply"]
