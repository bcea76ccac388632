"""Constrained decoding that costs little: check the model's own choice against the grammar first.

llama.cpp's grammar sampler can mask the whole vocabulary (262k tokens for Gemma) at every step,
which is what makes grammar decoding slow. Most of the time the model's own pick already fits, so
:class:`ActionGrammar` asks the grammar about that single token (as llama.cpp's common sampler
does). When the pick is rejected it judges only the tokens whose logits are near the best, which
finds the same best allowed token; the whole vocabulary is judged only when none of those fits.

The grammar is canonical: JSON exactly as ``json.dumps`` writes it, with ``", "`` and ``": "`` as
separators and no other whitespace, so that an action has one spelling. Wherever the grammar then
allows a single byte next (the keys, the quotes, the rest of a skill name once its prefix is
unique), :meth:`ActionGrammar.forced` says so, and the decoder takes that text without sampling.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from edge_agentd.agent.protocol import ModelError
from edge_agentd.model.bindings import llama_cpp

# Deep enough for real nested argument models; shallow enough that references cannot blow up.
_MAX_REF_DEPTH = 6
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class GrammarError(ModelError):
    """The action schema could not be turned into a grammar."""

    code = "grammar"


class BadPrefix(ModelError):
    """Text a reply was told to start with is not allowed by the action grammar."""

    code = "bad_prefix"


def inline_refs(schema: Any) -> Any:
    """A copy of ``schema`` with local ``$ref``s replaced by their definitions.

    pydantic puts ``$defs`` inside each skill's argument schema, where the combined action schema
    cannot resolve them. A reference nested deeper than a few levels (a recursive type) becomes
    ``{}``, any JSON value; the strict parser still checks the arguments.
    """

    def walk(node: Any, defs: dict[str, Any], depth: int) -> Any:
        if isinstance(node, list):
            return [walk(item, defs, depth) for item in node]
        if not isinstance(node, dict):
            return node
        local = node.get("$defs")
        if isinstance(local, dict):
            defs = {**defs, **local}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs.get(ref[len("#/$defs/") :])
            if target is None or depth >= _MAX_REF_DEPTH:
                return {}
            return walk(target, defs, depth + 1)
        return {k: walk(v, defs, depth) for k, v in node.items() if k != "$defs"}

    return walk(schema, {}, 0)


def lex_gbnf(text: str) -> list[str]:
    """GBNF text in pieces: quoted literals and character classes whole, names, and the rest
    one character at a time (whitespace included), so that joining them gives the text back."""
    pieces: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in '"[':
            close = '"' if c == '"' else "]"
            j = i + 1
            while j < len(text) and text[j] != close:
                j += 2 if text[j] == "\\" else 1
            pieces.append(text[i : j + 1])
            i = j + 1
        elif c.isalnum() or c in "-_":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] in "-_"):
                j += 1
            pieces.append(text[i:j])
            i = j
        else:
            pieces.append(c)
            i += 1
    return pieces


def canonical_gbnf(gbnf: str) -> str:
    """llama-cpp-python's grammar with its optional whitespace taken out: ``","`` and ``":"``
    become ``", "`` and ``": "`` (``json.dumps``'s separators) and every other ``space`` is
    empty. The strict parser accepts this JSON as it accepts any other."""
    lines = []
    for line in gbnf.splitlines():
        name, sep, body = line.partition("::=")
        if sep and name.strip() == "space":
            lines.append(f'{name}{sep} ""')
            continue
        pieces = lex_gbnf(body)
        out: list[str] = []
        k = 0
        while k < len(pieces):
            piece = pieces[k]
            if piece in ('","', '":"'):
                # The separator absorbs the ``space`` that follows it (past blanks), if any.
                j = k + 1
                while j < len(pieces) and pieces[j].isspace():
                    j += 1
                if j < len(pieces) and pieces[j] == "space":
                    out.append(piece[:-1] + ' "')
                    k = j + 1
                    continue
            out.append(piece)
            k += 1
        lines.append(name + sep + "".join(out))
    return "\n".join(lines) + "\n"


def schema_to_gbnf(schema: dict[str, Any]) -> str:
    """The canonical GBNF grammar of one action; raises :class:`GrammarError` if the schema is
    unusable."""
    try:
        # By its full name, after the bindings registered the bare package (see bindings.py).
        grammar_module = importlib.import_module("llama_cpp.llama_grammar")
        text = grammar_module.json_schema_to_gbnf(json.dumps(inline_refs(schema)))
        return canonical_gbnf(str(text))
    except (
        KeyError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        AssertionError,
        RecursionError,
    ) as exc:  # what llama-cpp-python's converter raises on schemas it cannot follow
        raise GrammarError(f"the action schema cannot be made into a grammar: {exc!r}") from exc


KEPT_TOKENS = 4096
"""Tokens the kept token-data array holds: the most a grammar judges short of the whole
vocabulary (:attr:`ActionGrammar.max_candidates`, and the byte probes)."""


def _token_data(count: int) -> tuple[Any, npt.NDArray[Any]]:
    data = (llama_cpp.llama_token_data * count)()
    return data, np.frombuffer(memoryview(data), dtype=_TOKEN_DATA)


class VocabBuffer:
    """A token-data array shared by all grammars of a model, and the tokens that ask a grammar
    which byte may come next.

    The array holds the few thousand tokens a grammar judges on its usual path. A pass over the
    whole vocabulary (rare: only when none of those fits) gets arrays of its own, dropped after
    it, rather than keeping an array of the whole vocabulary resident for good.
    """

    def __init__(self, n_vocab: int, byte_tokens: list[int], end_token: int) -> None:
        self.n_vocab = n_vocab
        self.data, self.view = _token_data(max(1, min(n_vocab, KEPT_TOKENS)))
        # Byte 0 is left out: llama.cpp's grammar never allows a token that starts with it.
        bytes_known = [b for b in range(1, 256) if b < len(byte_tokens) and byte_tokens[b] >= 0]
        self.probe_bytes = bytes(bytes_known)
        """The byte each probe token stands for; the last probe is the end-of-generation token."""
        self.probe_ids = np.array(
            [byte_tokens[b] for b in bytes_known] + [end_token], dtype=np.int32
        )
        self.probe_zeros = np.zeros(len(self.probe_ids), dtype=np.float32)
        # A byte without its own token could be allowed unseen: then nothing is ever forced.
        self.can_force = len(bytes_known) == 255 and end_token >= 0

    def all_ids(self) -> npt.NDArray[np.int32]:
        """Every token id, for a pass over the whole vocabulary."""
        return np.arange(self.n_vocab, dtype=np.int32)

    def table(self, count: int) -> tuple[Any, npt.NDArray[Any]]:
        """A token-data array of at least ``count`` entries, and its numpy view."""
        if count <= len(self.view):
            return self.data, self.view
        return _token_data(count)


class ActionGrammar:
    """One compiled grammar, reset at the start of each reply."""

    margins: tuple[float, ...] = (6.0, 16.0)
    """How far below the best logit the grammar looks for an allowed token before it judges the
    whole vocabulary."""
    max_candidates = KEPT_TOKENS

    def __init__(self, vocab: Any, gbnf: str, buffer: VocabBuffer) -> None:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
        if not sampler:
            raise GrammarError("llama.cpp rejected the grammar built from the action schema")
        self._sampler: Any = sampler
        self._buffer = buffer
        self.full_masks = 0
        self.partial_masks = 0

    def reset(self) -> None:
        llama_cpp.llama_sampler_reset(self._sampler)
        self.full_masks = 0
        self.partial_masks = 0

    def allows(self, token: int) -> bool:
        """Whether the grammar accepts ``token`` next: one token's check, not the vocabulary's."""
        one = llama_cpp.llama_token_data(token, 1.0, 0.0)
        array = llama_cpp.llama_token_data_array(ctypes.pointer(one), 1, -1, False)
        llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(array))
        return not math.isinf(one.logit)

    def start_with(self, tokens: list[int], text: str) -> None:
        """Accept ``tokens`` (``text``, a reply's given start), or raise :class:`BadPrefix`."""
        for token in tokens:
            # An unchecked token the grammar cannot take would abort inside llama.cpp.
            if not self.allows(token):
                raise BadPrefix(f"the action grammar does not allow a reply to start {text!r}")
            self.accept(token)

    def _apply(
        self, ids: npt.NDArray[np.int32], logits: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """The grammar's verdict on ``ids``: their logits, or -inf where it rejects them."""
        data_array, whole = self._buffer.table(len(ids))
        view = whole[: len(ids)]
        view["id"] = ids
        view["logit"] = logits
        data = ctypes.cast(data_array, llama_cpp.llama_token_data_p)
        array = llama_cpp.llama_token_data_array(data, len(ids), -1, False)
        llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(array))
        verdict: npt.NDArray[np.float32] = view["logit"].copy()
        return verdict

    def mask(
        self, logits: npt.NDArray[np.float32], *, full: bool = False
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """The tokens the grammar was asked about and their logits, -inf where it says no.

        The grammar first judges only the tokens whose logits are near the best, widening the set
        until one fits: the best allowed token is then the same one a full pass would find, for a
        fraction of its cost. Only when none fits (or with ``full``) is the whole vocabulary
        judged.
        """
        if not full:
            best = float(logits.max())
            for margin in self.margins:
                candidates = np.flatnonzero(logits >= best - margin).astype(np.int32)
                if len(candidates) > self.max_candidates:
                    keep = np.argpartition(logits[candidates], -self.max_candidates)
                    candidates = candidates[keep[-self.max_candidates :]]
                judged = self._apply(candidates, logits[candidates])
                if np.isfinite(judged).any():
                    # Any allowed token here outranks every token outside the set.
                    self.partial_masks += 1
                    return candidates, judged
        self.full_masks += 1
        ids = self._buffer.all_ids()
        return ids, self._apply(ids, logits)

    def forced(self, limit: int) -> tuple[bytes, bool]:
        """The text the grammar allows next and nothing else (at most ``limit`` bytes), already
        accepted, and whether the grammar then allows only the end of the reply.

        Each step asks the grammar about one token per byte value and about the end token: when
        exactly one byte fits, every allowed continuation starts with it, so it is taken.
        """
        buffer = self._buffer
        if not buffer.can_force:
            return b"", False
        text = bytearray()
        end = len(buffer.probe_ids) - 1
        while len(text) < limit:
            allowed = np.flatnonzero(np.isfinite(self._apply(buffer.probe_ids, buffer.probe_zeros)))
            if len(allowed) != 1:
                break
            if allowed[0] == end:
                return bytes(text), True
            # Allowed on the line above, so accepting cannot abort inside llama.cpp.
            llama_cpp.llama_sampler_accept(self._sampler, int(buffer.probe_ids[allowed[0]]))
            text.append(buffer.probe_bytes[allowed[0]])
        return bytes(text), False

    def accept(self, token: int) -> None:
        llama_cpp.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler is not None:
            llama_cpp.llama_sampler_free(self._sampler)
            self._sampler = None


class GrammarCache:
    """Compiled grammars by schema: the registry hands out one dict per version, so its identity
    is the fast key and its JSON text the sure one."""

    def __init__(
        self,
        vocab: Any,
        n_vocab: int,
        size: int = 8,
        *,
        byte_tokens: list[int] | None = None,
        end_token: int = -1,
        to_gbnf: Callable[[dict[str, Any]], str] = schema_to_gbnf,
    ) -> None:
        self._vocab = vocab
        self._to_gbnf = to_gbnf
        self._buffer = VocabBuffer(n_vocab, byte_tokens or [], end_token)
        self._size = size
        self._by_id: dict[int, tuple[dict[str, Any], ActionGrammar]] = {}
        self._by_text: OrderedDict[str, ActionGrammar] = OrderedDict()

    def get(self, schema: dict[str, Any]) -> ActionGrammar:
        if not isinstance(schema, dict):
            raise TypeError(f"action_schema must be a dict, not {type(schema).__name__}")
        hit = self._by_id.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        try:
            text = json.dumps(schema, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise GrammarError(f"the action schema is not JSON: {exc}") from exc
        grammar = self._by_text.get(text)
        if grammar is None:
            grammar = ActionGrammar(self._vocab, self._to_gbnf(schema), self._buffer)
            self._by_text[text] = grammar
            while len(self._by_text) > self._size:
                _, old = self._by_text.popitem(last=False)
                self._by_id = {k: v for k, v in self._by_id.items() if v[1] is not old}
                old.close()
        else:
            self._by_text.move_to_end(text)
        # Keeping the schema object alive keeps its id from being reused by another dict.
        self._by_id[id(schema)] = (schema, grammar)
        if len(self._by_id) > 4 * self._size:
            self._by_id = {id(schema): (schema, grammar)}
        return grammar

    def close(self) -> None:
        for grammar in self._by_text.values():
            grammar.close()
        self._by_text.clear()
        self._by_id.clear()
