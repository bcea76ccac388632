"""The exact prompt text of each model family, and formats read off a GGUF's own chat template."""

from __future__ import annotations

import dataclasses

import pytest

from edge_agentd.model.formats import (
    GEMMA3,
    GEMMA4,
    TemplateUnusable,
    choose_format,
    format_from_template,
)
from edge_agentd.model.gguf import ModelLoadError

# Gemma 3's template as Google ships it (tokenizer_config.json of gemma-3-*-it), image branch kept.
GEMMA3_TEMPLATE = (
    "{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n"
    "    {%- endif -%}\n    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n"
    '    {%- set first_user_prefix = "" -%}\n    {%- set loop_messages = messages -%}\n'
    "{%- endif -%}\n{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    '        {{ raise_exception("Conversation roles must alternate user/assistant/user/...") }}\n'
    "    {%- endif -%}\n    {%- if (message['role'] == 'assistant') -%}\n"
    '        {%- set role = "model" -%}\n    {%- else -%}\n'
    "        {%- set role = message['role'] -%}\n    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n            {%- endif -%}\n"
    "        {%- endfor -%}\n    {%- else -%}\n"
    '        {{ raise_exception("Invalid content type") }}\n    {%- endif -%}\n'
    "    {{ '<end_of_turn>\n' }}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\n'}}\n{%- endif -%}\n"
)

# The shape of Gemma 4's template: a native system turn, <|turn>role ... <turn|>.
GEMMA4_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{{ '<|turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\n' }}"
    "{{ m['content'] | trim }}{{ '<turn|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|turn>model\n' }}{% endif %}"
)

CHATML_TEMPLATE = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


PINNED = {
    "gemma3": (
        GEMMA3,
        "<start_of_turn>user\nYou are a home assistant.\n\nIs it warm?<end_of_turn>\n"
        "<start_of_turn>model\n",
        '{"final_answer": "yes"}<end_of_turn>\n<start_of_turn>user\nResult: 21<end_of_turn>\n'
        "<start_of_turn>model\n",
        "<start_of_turn>user\nS\n\n",
        ("<end_of_turn>",),
    ),
    "gemma4": (
        GEMMA4,
        "<|turn>system\nYou are a home assistant.<turn|>\n<|turn>user\nIs it warm?<turn|>\n"
        "<|turn>model\n",
        '{"final_answer": "yes"}<turn|>\n<|turn>user\nResult: 21<turn|>\n<|turn>model\n',
        "<|turn>system\nS<turn|>\n<|turn>user\n",
        ("<turn|>",),
    ),
}


@pytest.mark.parametrize("family", list(PINNED))
def test_prompt_text_is_pinned(family: str) -> None:
    chat_format, opening, turn, preamble, stop = PINNED[family]
    assert chat_format.opening("You are a home assistant.", "Is it warm?") == opening
    assert (
        chat_format.model_turn_end('{"final_answer": "yes"}') + chat_format.user_turn("Result: 21")
        == turn
    )
    assert chat_format.preamble("S") == preamble
    assert chat_format.stop == stop


def test_gemma3_template_gives_the_gemma3_markers() -> None:
    derived = format_from_template(GEMMA3_TEMPLATE, name="gemma3", bos_token="<bos>")
    assert derived == GEMMA3


def test_gemma4_template_gives_the_gemma4_markers() -> None:
    derived = format_from_template(GEMMA4_TEMPLATE, name="gemma4", bos_token="<bos>")
    assert derived == GEMMA4


def test_other_architectures_work_with_their_template() -> None:
    fmt = choose_format("qwen2", CHATML_TEMPLATE, source="m.gguf")
    assert fmt.system_prefix == "<|im_start|>system\n"
    assert fmt.system_suffix == "<|im_end|>\n"
    assert fmt.user_prefix == "<|im_start|>user\n"
    assert fmt.model_prefix == "<|im_start|>assistant\n"
    assert fmt.model_suffix == "<|im_end|>\n"
    assert fmt.stop == ("<|im_end|>",)
    assert fmt.opening("S", "Q") == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
    )


def test_the_template_wins_over_the_family_default() -> None:
    custom = GEMMA4_TEMPLATE.replace("<turn|>", "<eot>")
    fmt = choose_format("gemma4", custom, source="m.gguf")
    assert fmt.model_suffix == "<eot>\n"
    assert fmt == dataclasses.replace(
        GEMMA4,
        name="gemma4-template",
        system_suffix="<eot>\n",
        user_suffix="<eot>\n",
        model_suffix="<eot>\n",
        stop=("<eot>",),
    )


@pytest.mark.parametrize(
    "template",
    [
        "{{ raise_exception('no') }}",
        "{% for m in messages %}{{ m.content }}{% endfor %}",
        "{{ messages[0]['content'] }}",
        "{% if %}",
        "{{ ''.__class__.__mro__ }}",
    ],
)
def test_unusable_templates(template: str) -> None:
    with pytest.raises(TemplateUnusable):
        format_from_template(template, name="x")
    assert choose_format("gemma3", template, source="m.gguf") == GEMMA3
    with pytest.raises(ModelLoadError, match="not a Gemma model"):
        choose_format("llama", template, source="m.gguf")


def test_unknown_architecture_without_template_is_a_clear_error() -> None:
    with pytest.raises(ModelLoadError, match=r"'mamba'.*no chat template"):
        choose_format("mamba", None, source="m.gguf")
    with pytest.raises(ModelLoadError):
        choose_format(None, None, source="m.gguf")
    assert choose_format("gemma3n", None, source="m.gguf") == GEMMA3
    assert choose_format("gemma4", None, source="m.gguf") == GEMMA4
