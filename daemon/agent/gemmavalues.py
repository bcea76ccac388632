"""Values in Gemma 4's tool syntax, written as its chat template writes them and read back.

Gemma 4's template (its ``format_argument`` macro) writes a string between two ``<|"|>``
tokens with nothing escaped, ``true``/``false``, a mapping as ``{key:value,...}`` with its keys
in Jinja's ``dictsort`` order (case-insensitive) and bare, a list as ``[value,...]``, and any
other value as Jinja prints it (a number as Python does, ``None`` for None). No whitespace is
written. :func:`gemma_value` writes exactly that; :func:`parse_gemma_dict` reads it back
strictly, allowing only what llama.cpp's own Gemma 4 parser also allows besides (blanks around
the separators, ``null`` for None). docs/design.md, "Tool formats", says where each detail was
found.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from edge_agentd.agent.jsonvalues import walk

QUOTE = '<|"|>'
TOOL_TOKENS = (
    "<|tool>",
    "<tool|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|tool_response>",
    "<tool_response|>",
    QUOTE,
)
"""The tokens of Gemma 4's tool blocks, which no value written into a prompt may contain."""

_MAX_DEPTH = 32
_MAX_DIGITS = 64
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_KEY = re.compile(r"[^\s:,{}\[\]<>]+")
_BLANK = re.compile(r"\s*")


def plain(text: str) -> str:
    """``text`` with each of the tool blocks' tokens broken by a zero-width space after its
    first character: a skill's text or result cannot open, close or quote a block."""
    for token in TOOL_TOKENS:
        if token in text:
            text = text.replace(token, f"{token[0]}\u200b{token[1:]}")
    return text


def dictsorted(mapping: Mapping[Any, Any]) -> list[tuple[str, Any]]:
    """``mapping``'s items in the order Jinja's ``dictsort`` gives them (case-insensitive)."""
    items = [(str(key), value) for key, value in mapping.items()]
    return sorted(items, key=lambda item: item[0].lower())


class _Text(str):
    """Text a value is written with (a brace, a key), not a string value."""

    __slots__ = ()


def gemma_value(value: Any, *, escape_keys: bool = False) -> str:
    """``value`` as the template's ``format_argument`` writes it (``escape_keys``: keys
    between ``<|"|>`` too, as the declarations' enums are written)."""
    out: list[str] = []

    def visit(node: Any, at: None) -> list[tuple[Any, None]]:
        if isinstance(node, _Text):
            out.append(node)
        elif isinstance(node, str):
            out.append(QUOTE + plain(node) + QUOTE)
        elif isinstance(node, bool):
            out.append("true" if node else "false")
        elif isinstance(node, Mapping):
            parts: list[tuple[Any, None]] = []
            for index, (key, item) in enumerate(dictsorted(node)):
                name = QUOTE + plain(key) + QUOTE if escape_keys else plain(key)
                parts += [(_Text(("," if index else "") + name + ":"), at), (item, at)]
            return [(_Text("{"), at), *parts, (_Text("}"), at)]
        elif isinstance(node, list | tuple):
            parts = []
            for index, item in enumerate(node):
                parts += [(_Text(","), at)] if index else []
                parts.append((item, at))
            return [(_Text("["), at), *parts, (_Text("]"), at)]
        else:
            out.append("None" if node is None else str(node))
        return []

    walk(value, visit, None)
    return "".join(out)


class GemmaSyntaxError(ValueError):
    """Text that is not a value in Gemma 4's tool syntax; ``pos`` is where reading stopped."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(f"{message} at character {pos}")
        self.pos = pos


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text

    def blank(self, pos: int) -> int:
        match = _BLANK.match(self.text, pos)
        return match.end() if match else pos

    def expect(self, literal: str, pos: int, what: str) -> int:
        if not self.text.startswith(literal, pos):
            raise GemmaSyntaxError(f"expected {what}", pos)
        return pos + len(literal)

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        if depth > _MAX_DEPTH:
            raise GemmaSyntaxError("values nested too deeply", pos)
        text = self.text
        if text.startswith(QUOTE, pos):
            end = text.find(QUOTE, pos + len(QUOTE))
            if end == -1:
                raise GemmaSyntaxError(f"a string opened with {QUOTE} is not closed", pos)
            return text[pos + len(QUOTE) : end], end + len(QUOTE)
        if text.startswith("{", pos):
            return self.mapping(pos, depth)
        if text.startswith("[", pos):
            return self.sequence(pos, depth)
        for word, meaning in (("true", True), ("false", False), ("null", None), ("None", None)):
            if text.startswith(word, pos):
                return meaning, pos + len(word)
        number = _NUMBER.match(text, pos)
        if number:
            spelled = number.group()
            if not any(c in spelled for c in ".eE"):
                if len(spelled) > _MAX_DIGITS:
                    raise GemmaSyntaxError("a number with too many digits", pos)
                return int(spelled), number.end()
            if not math.isfinite(float(spelled)):
                raise GemmaSyntaxError("a number out of range", pos)
            return float(spelled), number.end()
        if text.startswith('"', pos):
            raise GemmaSyntaxError(f"a string is written between {QUOTE} and {QUOTE}", pos)
        raise GemmaSyntaxError("expected a value", pos)

    def key(self, pos: int) -> tuple[str, int]:
        if self.text.startswith(QUOTE, pos):
            key, end = self.value(pos, 0)
            return str(key), end
        match = _KEY.match(self.text, pos)
        if not match:
            raise GemmaSyntaxError("expected a key", pos)
        return match.group(), match.end()

    def mapping(self, pos: int, depth: int) -> tuple[dict[str, Any], int]:
        pos = self.blank(self.expect("{", pos, "'{'"))
        found: dict[str, Any] = {}
        if self.text.startswith("}", pos):
            return found, pos + 1
        while True:
            start = pos
            key, pos = self.key(pos)
            pos = self.blank(self.expect(":", self.blank(pos), f"':' after the key {key!r}"))
            if key in found:
                raise GemmaSyntaxError(f"the key {key!r} is given twice", start)
            found[key], pos = self.value(pos, depth + 1)
            pos = self.blank(pos)
            if self.text.startswith("}", pos):
                return found, pos + 1
            pos = self.blank(self.expect(",", pos, "',' or '}'"))

    def sequence(self, pos: int, depth: int) -> tuple[list[Any], int]:
        pos = self.blank(self.expect("[", pos, "'['"))
        items: list[Any] = []
        if self.text.startswith("]", pos):
            return items, pos + 1
        while True:
            item, pos = self.value(pos, depth + 1)
            items.append(item)
            pos = self.blank(pos)
            if self.text.startswith("]", pos):
                return items, pos + 1
            pos = self.blank(self.expect(",", pos, "',' or ']'"))


def parse_gemma_dict(text: str, pos: int = 0) -> tuple[dict[str, Any], int]:
    """The mapping written at ``text[pos:]`` and where it ends; raises
    :class:`GemmaSyntaxError` where the text is not one."""
    return _Reader(text).mapping(pos, 0)


__all__ = [
    "QUOTE",
    "TOOL_TOKENS",
    "GemmaSyntaxError",
    "dictsorted",
    "gemma_value",
    "parse_gemma_dict",
    "plain",
]
