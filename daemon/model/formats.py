"""Prompt formats of the Gemma families, and reading one off a GGUF's own chat template."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import Any

from edge_agentd.agent.prompt import ChatFormat
from edge_agentd.model.gguf import ModelLoadError

GEMMA3 = ChatFormat(
    name="gemma3",
    user_prefix="<start_of_turn>user\n",
    user_suffix="<end_of_turn>\n",
    model_prefix="<start_of_turn>model\n",
    model_suffix="<end_of_turn>\n",
    system_prefix=None,
    stop=("<end_of_turn>",),
    reserved=("<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<pad>"),
)

GEMMA4 = ChatFormat(
    name="gemma4",
    system_prefix="<|turn>system\n",
    system_suffix="<turn|>\n",
    user_prefix="<|turn>user\n",
    user_suffix="<turn|>\n",
    model_prefix="<|turn>model\n",
    model_suffix="<turn|>\n",
    stop=("<turn|>",),
    reserved=("<|turn>", "<turn|>", "<bos>", "<eos>", "<pad>"),
)

FORMATS_BY_ARCHITECTURE: dict[str, ChatFormat] = {
    "gemma3": GEMMA3,
    "gemma3n": GEMMA3,
    "gemma4": GEMMA4,
}

# Sentinels that no template would produce on its own; rendering them shows where each role's
# text sits.
_SYSTEM = "\x1aSYSTEM-7f3c\x1a"
_USER = "\x1aUSER-7f3c\x1a"
_USER2 = "\x1aUSER2-7f3c\x1a"
_MODEL = "\x1aMODEL-7f3c\x1a"


_TAG = re.compile(r"<[^<>\s]{1,40}>")


class TemplateUnusable(Exception):
    """A chat template could not be rendered into turn markers."""


def _render(template: Any, bos: str, eos: str, messages: list[dict[str, str]], gen: bool) -> str:
    text = str(
        template.render(
            messages=messages,
            add_generation_prompt=gen,
            bos_token=bos,
            eos_token=eos,
        )
    )
    return text[len(bos) :] if bos and text.startswith(bos) else text


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    j = text.find(end, i + len(start))
    if i < 0 or j < 0:
        raise TemplateUnusable(f"the template drops or reorders a message ({start!r})")
    return text[i + len(start) : j]


def _user_prefix(before_user: str, between_turns: str, user_suffix: str) -> tuple[str, str]:
    """How a user turn opens, and the default system turn the template writes before the first
    one when no system message is given (empty for most templates).

    ``before_user`` is all the template writes before the first user message, ``between_turns``
    all it writes between the model's reply and the second user message: the model turn's end,
    then the user turn's opening. Where the first turn opens with more than the second (Qwen2.5
    adds "<|im_start|>system\nYou are Qwen, ...<|im_end|>\n" when no system message is given),
    the model's turn is taken to close as the user's does, and the rest opens the user turn.
    """
    if before_user and between_turns.endswith(before_user):
        return before_user, ""
    if user_suffix.strip() and between_turns.startswith(user_suffix):
        opening = between_turns[len(user_suffix) :]
        if opening.strip() and before_user.endswith(opening):
            return opening, before_user[: len(before_user) - len(opening)]
    raise TemplateUnusable("the second user turn does not open like the first")


def format_from_template(
    source: str, *, name: str, bos_token: str = "", eos_token: str = ""
) -> ChatFormat:
    """The turn markers a Jinja chat template produces, found by rendering sentinel messages.

    Raises :class:`TemplateUnusable` when the template cannot be rendered or does not put each
    message in its own turn.
    """
    import jinja2  # noqa: PLC0415 - only models with a template need it
    from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: PLC0415

    def raise_exception(message: str) -> None:
        raise TemplateUnusable(f"the template refused the sample messages: {message}")

    try:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        template = env.from_string(source)

        def render(messages: list[dict[str, str]], gen: bool) -> str:
            return _render(template, bos_token, eos_token, messages, gen)

        user = {"role": "user", "content": _USER}
        model = {"role": "assistant", "content": _MODEL}
        user2 = {"role": "user", "content": _USER2}
        dialogue = render([user, model, user2], True)
        closed_user = render([user], False)
        opened = render([user], True)
        with_system = render([{"role": "system", "content": _SYSTEM}, user], False)
    except TemplateUnusable:
        raise
    except (jinja2.TemplateError, TypeError, ValueError, AttributeError, KeyError) as exc:
        raise TemplateUnusable(f"the template cannot be rendered: {exc}") from exc

    before_user = dialogue.split(_USER, 1)[0]
    user_suffix = closed_user.split(_USER, 1)[1] if _USER in closed_user else ""
    after_user = opened.split(_USER, 1)[1] if _USER in opened else ""
    if not after_user.startswith(user_suffix):
        raise TemplateUnusable("the generation prompt does not follow the closed user turn")
    model_prefix = after_user[len(user_suffix) :]
    model_turn = _between(dialogue, _USER, _MODEL)
    if model_turn != user_suffix + model_prefix:
        raise TemplateUnusable("the model turn does not open the way the generation prompt does")
    between_turns = _between(dialogue, _MODEL, _USER2)
    user_prefix, default_system = _user_prefix(before_user, between_turns, user_suffix)
    model_suffix = between_turns[: len(between_turns) - len(user_prefix)]
    if not model_suffix.strip():
        raise TemplateUnusable("the template does not mark the end of the model's turn")
    if not model_prefix.strip():
        raise TemplateUnusable("the template does not mark the start of the model's turn")

    if _SYSTEM not in with_system:
        raise TemplateUnusable("the template drops the system message")
    before_system, after_system = with_system.split(_SYSTEM, 1)
    system_prefix: str | None
    system_suffix = ""
    if before_system == user_prefix and after_system == f"\n\n{_USER}{user_suffix}":
        system_prefix = None  # no system role: the system text opens the first user turn
    elif after_system.endswith(f"{user_prefix}{_USER}{user_suffix}"):
        system_prefix = before_system
        system_suffix = after_system[: -len(f"{user_prefix}{_USER}{user_suffix}")]
    else:
        raise TemplateUnusable("the template puts the system message where it cannot be reused")
    if default_system and not (
        system_prefix is not None
        and default_system.startswith(system_prefix)
        and default_system.endswith(system_suffix)
    ):
        # Our prompts always carry a system turn, which replaces a default system turn; text
        # that is not one would be missing from every prompt we render.
        raise TemplateUnusable(
            "the template writes text of its own before the first user turn, and a system "
            "message does not replace it"
        )
    stop = model_suffix.strip()
    return ChatFormat(
        name=name,
        system_prefix=system_prefix,
        system_suffix=system_suffix,
        user_prefix=user_prefix,
        user_suffix=user_suffix,
        model_prefix=model_prefix,
        model_suffix=model_suffix,
        stop=(stop,),
        reserved=_tags(
            system_prefix,
            system_suffix,
            user_prefix,
            user_suffix,
            model_prefix,
            stop,
            bos_token,
            eos_token,
        ),
    )


def format_texts(fmt: ChatFormat) -> list[str]:
    """Every text the format itself writes into a prompt: its turn markers and stop strings."""
    return [
        fmt.system_prefix or "",
        fmt.system_suffix,
        fmt.user_prefix,
        fmt.user_suffix,
        fmt.model_prefix,
        fmt.model_suffix,
        *fmt.stop,
    ]


def turn_markers(fmt: ChatFormat, control_tokens: Iterable[str]) -> tuple[str, ...]:
    """The control tokens (from the model's vocabulary) that the format's own turn markers hold,
    such as ``<start_of_turn>``: the only control tokens a prompt may contain (docs/design.md,
    "Decisions": prompt hygiene)."""
    texts = format_texts(fmt)
    return tuple(
        dict.fromkeys(token for token in control_tokens if token and any(token in t for t in texts))
    )


def hygiene(
    fmt: ChatFormat, control_tokens_in: Callable[[Iterable[str]], Iterable[str]]
) -> tuple[ChatFormat, tuple[str, ...]]:
    """``fmt`` with its ``reserved`` turn markers (:func:`turn_markers`, ``control_tokens_in``
    saying which texts the model's vocabulary reads as control tokens), and every text a prompt
    writes as a control token: those, and its tool format's own tokens that are control tokens
    (which the format keeps out of every text it did not write itself)."""
    markers = turn_markers(fmt, control_tokens_in(format_texts(fmt)))
    tools = fmt.calls.tokens if fmt.calls is not None else ()
    found = set(control_tokens_in(tools)) if tools else set()
    own = tuple(token for token in tools if token in found and token not in markers)
    return dataclasses.replace(fmt, reserved=markers), markers + own


def _tags(*markers: str | None) -> tuple[str, ...]:
    """The control-token-looking pieces of the turn markers, such as ``<end_of_turn>``."""
    found = dict.fromkeys(tag for marker in markers if marker for tag in _TAG.findall(marker))
    return tuple(found)


def choose_format(
    architecture: str | None,
    template: str | None,
    *,
    source: str,
    bos_token: str = "",
    eos_token: str = "",
) -> ChatFormat:
    """The format for a model: its own chat template where usable, else its family's.

    Raises :class:`ModelLoadError` for an architecture this project does not know that carries no
    usable chat template.
    """
    known = FORMATS_BY_ARCHITECTURE.get(architecture or "")
    if template is not None:
        try:
            return format_from_template(
                template,
                name=f"{architecture or 'model'}-template",
                bos_token=bos_token,
                eos_token=eos_token,
            )
        except TemplateUnusable as exc:
            if known is None:
                raise ModelLoadError(
                    f"{source}: architecture {architecture!r} is not a Gemma model and its chat "
                    f"template cannot be used ({exc}). Use a Gemma 3, 3n or 4 GGUF, or one whose "
                    "chat template puts each message in its own turn."
                ) from exc
    if known is not None:
        return known
    raise ModelLoadError(
        f"{source}: architecture {architecture!r} is not a Gemma model and the file carries no "
        "chat template, so its prompt format is unknown. Use a Gemma 3, 3n or 4 GGUF, or a GGUF "
        "that includes tokenizer.chat_template."
    )
