"""The last reply's own token ids, so the next step's prompt reads it from the cache as it was.

A step's prompt is the previous prompt, the model's reply and the new turn (docs/design.md,
"Prompts are append-only"). Tokenized afresh, the reply's text does not always come out as the
tokens the model produced: a sampled token may be one the tokenizer would not pick, and forced
text is spelled token by token. Every token after the first difference would then be evaluated
again, a large share of each step's prompt. So the text the last call's
tokens spell is kept with those tokens; a prompt that starts with that text is tokenized as
those tokens and the rest, and only the rest is new to the cache.

The tokens are kept only when they spell the text exactly (a stop string cut, a character cut
in half or a control token in the reply: not kept), so a prompt's tokens always spell its text,
and the text after the kept part is tokenized with the same hygiene as any prompt.
"""

from __future__ import annotations

from collections.abc import Sequence

from edge_agentd.model.runtime import LlamaRuntime


class Continuation:
    """The text the tokens of the last reply's call spell, and those tokens."""

    def __init__(self, runtime: LlamaRuntime, markers: Sequence[str]) -> None:
        self._runtime = runtime
        self._markers = tuple(markers)
        self.text = ""
        self.tokens: list[int] = []

    def tokenize(self, prompt: str) -> list[int]:
        """``prompt``'s tokens: the kept ones where it starts with the kept text, then the rest
        read as any prompt is (only the format's turn markers are control tokens)."""
        if not self.tokens or not prompt.startswith(self.text):
            return self._runtime.tokenize(prompt, markers=self._markers)
        rest = prompt[len(self.text) :]
        after = self._runtime.tokenize(rest, add_bos=False, markers=self._markers) if rest else []
        return [*self.tokens, *after]

    def keep(
        self, prompt: str, prompt_tokens: Sequence[int], reply: bytes, reply_tokens: Sequence[int]
    ) -> None:
        """Remember ``prompt`` followed by ``reply`` as ``prompt_tokens`` followed by
        ``reply_tokens``, if those reply tokens spell exactly ``reply`` (else forget)."""
        pieces = [self._runtime.piece(token) for token in reply_tokens]
        try:
            text = reply.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or b"".join(pieces) != reply or not all(pieces):
            # An empty piece is a control token: the prompt's text would not show it.
            self.forget()
            return
        self.text = prompt + text
        self.tokens = [*prompt_tokens, *reply_tokens]

    def forget(self) -> None:
        self.text, self.tokens = "", []


__all__ = ["Continuation"]
