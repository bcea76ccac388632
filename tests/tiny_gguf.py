"""Tiny random-weight GGUFs of llama.cpp's ``gemma4`` and ``qwen2`` architectures, for tests.

Gemma 4 E2B's real weights cannot be had here, so its code path is run on a model of the same
architecture, written with the ``gguf`` package's writer: the hyperparameters and tensors
llama.cpp's ``llama_model_gemma4`` loads (ggml-org/llama.cpp ``src/models/gemma4.cpp``,
``convert_hf_to_gguf.py``'s ``Gemma4Model``), at a few kilobytes per layer. It keeps what makes
Gemma 4 Gemma 4 for this project:

- the sliding-window layout: sliding layers with a small window (16 tokens, so every prompt
  here is longer than the window and the cut-back of the SWA cache is exercised) and a full
  layer every third, whose heads are wider (``key_length`` against ``key_length_swa``) and
  whose RoPE is "proportional" (``rope_freqs`` leaves three quarters of the dimensions
  unrotated), key/value sharing by the last layers (llama.cpp has each reuse the last sliding
  or full layer that has a cache of its own, so, as in E2B, the last of those is a full one)
  and per-layer token embeddings, as in E2B;
- the ``gemma4`` tokenizer (BPE over raw UTF-8 with ``▁`` for spaces and ``<0xXX>`` byte
  tokens) and its special tokens: ``<|turn>`` and ``<turn|>`` as control tokens, with other
  control tokens (``<eos>``, ``<|think|>``, ``<|image|>``, Gemma 3's ``<start_of_turn>``) that a
  prompt must never contain as such, the tool declarations' ``<|tool>`` and ``<tool|>`` as
  control tokens and the other tool and channel tokens as user-defined ones, as llama.cpp's
  converter types them (llama.cpp itself then reads ``<|tool_response>`` as a control token that
  ends a generation);
- a chat template of Gemma 4's form (``{{ bos_token }}``, a system turn, ``<|turn>`` + role,
  trimmed content, ``<turn|>``, ``<|turn>model`` as the generation prompt) with the real
  template's tool blocks, so Gemma 4's own tool format is read off it.

The weights are random (seeded), so the replies are noise that only a grammar makes valid.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

GEMMA4_TEMPLATE = """{%- macro format_parameters(properties, required) -%}
    {%- set standard_keys = ['description', 'type', 'properties', 'required', 'nullable'] -%}
    {%- set ns = namespace(found_first=false) -%}
    {%- for key, value in properties | dictsort -%}
        {%- set add_comma = false -%}
        {%- if key not in standard_keys -%}
            {%- if ns.found_first %},{% endif -%}
            {%- set ns.found_first = true -%}
            {{ key }}:{
            {%- if value['description'] -%}
                description:<|"|>{{ value['description'] }}<|"|>
                {%- set add_comma = true -%}
            {%- endif -%}
            {%- if value['nullable'] %}
                {%- if add_comma %},{%- else -%} {%- set add_comma = true -%} {% endif -%}
                nullable:true
            {%- endif -%}
            {%- if value['type'] | upper == 'STRING' -%}
                {%- if value['enum'] -%}
                    {%- if add_comma %},{%- else -%} {%- set add_comma = true -%} {% endif -%}
                    enum:{{ format_argument(value['enum']) }}
                {%- endif -%}
            {%- elif value['type'] | upper == 'OBJECT' -%}
                ,properties:{
                {%- if value['properties'] is defined and value['properties'] is mapping -%}
                    {{- format_parameters(value['properties'], value['required'] | default([])) -}}
                {%- elif value is mapping -%}
                    {{- format_parameters(value, value['required'] | default([])) -}}
                {%- endif -%}
                }
                {%- if value['required'] -%}
                    ,required:[
                    {%- for item in value['required'] | default([]) -%}
                        <|"|>{{- item -}}<|"|>
                        {%- if not loop.last %},{% endif -%}
                    {%- endfor -%}
                    ]
                {%- endif -%}
            {%- elif value['type'] | upper == 'ARRAY' -%}
                {%- if value['items'] is mapping and value['items'] -%}
                    ,items:{
                    {%- set ns_items = namespace(found_first=false) -%}
                    {%- for item_key, item_value in value['items'] | dictsort -%}
                        {%- if item_value is not none -%}
                            {%- if ns_items.found_first %},{% endif -%}
                            {%- set ns_items.found_first = true -%}
                            {%- if item_key == 'properties' -%}
                                properties:{
                                {%- if item_value is mapping -%}
                                    {{- format_parameters(item_value, value['items']['required'] | default([])) -}}
                                {%- endif -%}
                                }
                            {%- elif item_key == 'required' -%}
                                required:[
                                {%- for req_item in item_value -%}
                                    <|"|>{{- req_item -}}<|"|>
                                    {%- if not loop.last %},{% endif -%}
                                {%- endfor -%}
                                ]
                            {%- elif item_key == 'type' -%}
                                {%- if item_value is string -%}
                                    type:{{ format_argument(item_value | upper) }}
                                {%- else -%}
                                    type:{{ format_argument(item_value | map('upper') | list) }}
                                {%- endif -%}
                            {%- else -%}
                                {{ item_key }}:{{ format_argument(item_value) }}
                            {%- endif -%}
                        {%- endif -%}
                    {%- endfor -%}
                    }
                {%- endif -%}
            {%- endif -%}
            {%- if add_comma %},{%- else -%} {%- set add_comma = true -%} {% endif -%}
            type:<|"|>{{ value['type'] | upper }}<|"|>}
        {%- endif -%}
    {%- endfor -%}
{%- endmacro -%}
{%- macro format_function_declaration(tool_data) -%}
    declaration:{{- tool_data['function']['name'] -}}{description:<|"|>{{- tool_data['function']['description'] -}}<|"|>
    {%- set params = tool_data['function']['parameters'] -%}
    {%- if params -%}
        ,parameters:{
        {%- if params['properties'] -%}
            properties:{ {{- format_parameters(params['properties'], params['required']) -}} },
        {%- endif -%}
        {%- if params['required'] -%}
            required:[
            {%- for item in params['required'] -%}
                <|"|>{{- item -}}<|"|>
                {{- ',' if not loop.last -}}
            {%- endfor -%}
            ],
        {%- endif -%}
        {%- if params['type'] -%}
            type:<|"|>{{- params['type'] | upper -}}<|"|>}
        {%- endif -%}
    {%- endif -%}
    }
{%- endmacro -%}
{%- macro format_argument(argument, escape_keys=True) -%}
    {%- if argument is string -%}
        {{- '<|"|>' + argument + '<|"|>' -}}
    {%- elif argument is boolean -%}
        {{- 'true' if argument else 'false' -}}
    {%- elif argument is mapping -%}
        {{- '{' -}}
        {%- set ns = namespace(found_first=false) -%}
        {%- for key, value in argument | dictsort -%}
            {%- if ns.found_first %},{% endif -%}
            {%- set ns.found_first = true -%}
            {%- if escape_keys -%}
                {{- '<|"|>' + key + '<|"|>' -}}
            {%- else -%}
                {{- key -}}
            {%- endif -%}
            :{{- format_argument(value, escape_keys=escape_keys) -}}
        {%- endfor -%}
        {{- '}' -}}
    {%- elif argument is sequence -%}
        {{- '[' -}}
        {%- for item in argument -%}
            {{- format_argument(item, escape_keys=escape_keys) -}}
            {%- if not loop.last %},{% endif -%}
        {%- endfor -%}
        {{- ']' -}}
    {%- else -%}
        {{- argument -}}
    {%- endif -%}
{%- endmacro -%}
{%- set ns = namespace(prev_message_type=None) -%}
{%- set loop_messages = messages -%}
{{- bos_token -}}
{%- if tools or messages[0]['role'] in ['system', 'developer'] -%}
    {{- '<|turn>system\\n' -}}
    {%- if messages[0]['role'] in ['system', 'developer'] -%}
        {{- messages[0]['content'] | trim -}}
        {%- set loop_messages = messages[1:] -%}
    {%- endif -%}
    {%- if tools -%}
        {%- for tool in tools %}
            {{- '<|tool>' -}}
            {{- format_function_declaration(tool) | trim -}}
            {{- '<tool|>' -}}
        {%- endfor %}
    {%- endif -%}
    {{- '<turn|>\\n' -}}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
    {%- if not (ns.prev_message_type == 'tool_response' and message['tool_calls']) -%}
        {{- '<|turn>' + role + '\\n' -}}
    {%- endif -%}
    {%- set ns.prev_message_type = None -%}
    {%- if message['tool_calls'] -%}
        {%- for tool_call in message['tool_calls'] -%}
            {%- set function = tool_call['function'] -%}
            {{- '<|tool_call>call:' + function['name'] + '{' -}}
            {%- if function['arguments'] is mapping -%}
                {%- set ns_args = namespace(found_first=false) -%}
                {%- for key, value in function['arguments'] | dictsort -%}
                    {%- if ns_args.found_first %},{% endif -%}
                    {%- set ns_args.found_first = true -%}
                    {{- key -}}:{{- format_argument(value, escape_keys=False) -}}
                {%- endfor -%}
            {%- elif function['arguments'] is string -%}
                {{- function['arguments'] -}}
            {%- endif -%}
            {{- '}<tool_call|>' -}}
        {%- endfor -%}
        {%- set ns.prev_message_type = 'tool_call' -%}
    {%- endif -%}
    {%- if message['tool_responses'] -%}
        {%- for tool_response in message['tool_responses'] -%}
            {{- '<|tool_response>' -}}
            {%- if tool_response['response'] is mapping -%}
                {{- 'response:' + tool_response['name'] | default('unknown') + '{' -}}
                {%- for key, value in tool_response['response'] | dictsort -%}
                    {{- key -}}:{{- format_argument(value, escape_keys=False) -}}
                    {%- if not loop.last %},{% endif -%}
                {%- endfor -%}
                {{- '}' -}}
            {%- else -%}
                {{- 'response:' + tool_response['name'] | default('unknown') + '{value:' + format_argument(tool_response['response'], escape_keys=False) + '}' -}}
            {%- endif -%}
            {{- '<tool_response|>' -}}
        {%- endfor -%}
        {%- set ns.prev_message_type = 'tool_response' -%}
    {%- endif -%}
    {%- if message['content'] -%}
        {{- message['content'] | trim -}}
    {%- endif -%}
    {%- if not (message['tool_responses'] and not message['content']) -%}
        {{- '<turn|>\\n' -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt and ns.prev_message_type != 'tool_response' -%}
    {{- '<|turn>model\\n' -}}
{%- endif -%}
"""
"""Gemma 4's chat template in the parts this project reads: its real tool blocks (the macros
``format_parameters``, ``format_function_declaration`` and ``format_argument``, the tools'
declarations in the system turn, a model turn's ``tool_calls`` and ``tool_responses``, and no
generation prompt after a tool response), as llama.cpp keeps Google's template
(ggml-org/llama.cpp ``models/templates/google-gemma-4-31B-it-interleaved.jinja``), around the
turns as before; the thinking channel and images are left out."""

CONTROL = (
    "<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>", "<|think|>",
    "<|image|>", "<|audio|>", "<start_of_turn>", "<|tool>", "<tool|>",
)  # fmt: skip
USER_DEFINED = (
    "<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|tool_response>",
    "<tool_response|>", '<|"|>',
)  # fmt: skip
# Merged pieces the tokenizer can build from single characters, so BPE merging runs too.
WORDS = (
    "▁the", "▁is", "▁temperature", "skill_name", "final_answer", "arguments", "system",
    "user", "model", '{"', '":', '▁"', '",', "▁{", "}}", '"}',
)  # fmt: skip

N_EMBD = 64
N_HEAD = 2
N_HEAD_KV = 1
HEAD_SWA = 32
HEAD_FULL = 64
N_FF = 128
N_EMBD_PER_LAYER = 8
SWA_PATTERN = (True, True, False, True, True, False)
SHARED_KV_LAYERS = 3
SLIDING_WINDOW = 16
PARTIAL_ROTARY_FULL = 0.25


def _vocabulary() -> tuple[list[str], list[int], list[float], list[str]]:
    """Tokens, their types, scores and the merges that build the multi-character ones."""
    import gguf

    tokens: list[str] = []
    types: list[int] = []
    for text in CONTROL:
        tokens.append(text)
        types.append(gguf.TokenType.CONTROL)
    for text in USER_DEFINED:
        tokens.append(text)
        types.append(gguf.TokenType.USER_DEFINED)
    for value in range(256):
        tokens.append(f"<0x{value:02X}>")
        types.append(gguf.TokenType.BYTE)
    singles = ["▁", "\n", *(chr(c) for c in range(0x21, 0x7F)), "°"]
    for text in singles:
        tokens.append(text)
        types.append(gguf.TokenType.NORMAL)
    merges: list[str] = []
    known = set(tokens)
    for word in WORDS:
        # Left to right: each prefix is a token of its own, merged with the next character.
        piece = word[0]
        for char in word[1:]:
            merged = piece + char
            if merged not in known:
                merges.append(f"{piece} {char}")
                tokens.append(merged)
                types.append(gguf.TokenType.NORMAL)
                known.add(merged)
            piece = merged
    scores = [0.0] * len(tokens)
    return tokens, types, scores, merges


def build_gemma4_gguf(path: Path, *, seed: int = 4) -> Path:
    """Write the tiny gemma4 model to ``path`` and return it."""
    import gguf

    rng = np.random.default_rng(seed)
    n_layer = len(SWA_PATTERN)
    tokens, types, scores, merges = _vocabulary()
    n_vocab = len(tokens)

    writer = gguf.GGUFWriter(str(path), "gemma4")
    writer.add_name("tiny-gemma4-test")
    writer.add_context_length(4096)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_key_length(HEAD_FULL)
    writer.add_value_length(HEAD_FULL)
    writer.add_key_length_swa(HEAD_SWA)
    writer.add_value_length_swa(HEAD_SWA)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_sliding_window(SLIDING_WINDOW)
    writer.add_sliding_window_pattern(list(SWA_PATTERN))
    writer.add_shared_kv_layers(SHARED_KV_LAYERS)
    writer.add_embedding_length_per_layer_input(N_EMBD_PER_LAYER)
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_rope_freq_base_swa(10_000.0)
    writer.add_rope_dimension_count(HEAD_FULL)
    writer.add_rope_dimension_count_swa(HEAD_SWA)
    writer.add_final_logit_softcapping(30.0)

    writer.add_tokenizer_model("gemma4")
    writer.add_tokenizer_pre("gemma4")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<bos>"))
    writer.add_eos_token_id(tokens.index("<eos>"))
    writer.add_unk_token_id(tokens.index("<unk>"))
    writer.add_pad_token_id(tokens.index("<pad>"))
    writer.add_add_bos_token(True)
    writer.add_add_space_prefix(False)
    writer.add_chat_template(GEMMA4_TEMPLATE)

    def weight(*shape: int, scale: float = 0.05) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def norm(size: int) -> np.ndarray:
        return (1.0 + rng.standard_normal(size) * 0.01).astype(np.float32)

    # numpy shapes are ggml's ne reversed: ggml {n_embd, n_vocab} is (n_vocab, n_embd) here.
    writer.add_tensor("token_embd.weight", weight(n_vocab, N_EMBD, scale=0.5))
    writer.add_tensor("output_norm.weight", norm(N_EMBD))
    writer.add_tensor(
        "per_layer_token_embd.weight", weight(n_vocab, N_EMBD_PER_LAYER * n_layer, scale=0.5)
    )
    writer.add_tensor("per_layer_model_proj.weight", weight(N_EMBD_PER_LAYER * n_layer, N_EMBD))
    writer.add_tensor("per_layer_proj_norm.weight", norm(N_EMBD_PER_LAYER))
    rotated = int(HEAD_FULL * PARTIAL_ROTARY_FULL / 2)
    freqs = [1.0] * rotated + [1e30] * (HEAD_FULL // 2 - rotated)
    writer.add_tensor("rope_freqs.weight", np.array(freqs, dtype=np.float32))
    first_shared = n_layer - SHARED_KV_LAYERS
    for il, swa in enumerate(SWA_PATTERN):
        head = HEAD_SWA if swa else HEAD_FULL
        prefix = f"blk.{il}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", norm(N_EMBD))
        writer.add_tensor(f"{prefix}.attn_q.weight", weight(head * N_HEAD, N_EMBD))
        if il < first_shared:
            writer.add_tensor(f"{prefix}.attn_k.weight", weight(head * N_HEAD_KV, N_EMBD))
            writer.add_tensor(f"{prefix}.attn_v.weight", weight(head * N_HEAD_KV, N_EMBD))
            writer.add_tensor(f"{prefix}.attn_k_norm.weight", norm(head))
        writer.add_tensor(f"{prefix}.attn_output.weight", weight(N_EMBD, head * N_HEAD))
        writer.add_tensor(f"{prefix}.attn_q_norm.weight", norm(head))
        writer.add_tensor(f"{prefix}.post_attention_norm.weight", norm(N_EMBD))
        writer.add_tensor(f"{prefix}.layer_output_scale.weight", np.array([1.0], np.float32))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", norm(N_EMBD))
        writer.add_tensor(f"{prefix}.ffn_gate.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(f"{prefix}.ffn_up.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(f"{prefix}.ffn_down.weight", weight(N_EMBD, N_FF))
        writer.add_tensor(f"{prefix}.post_ffw_norm.weight", norm(N_EMBD))
        writer.add_tensor(f"{prefix}.inp_gate.weight", weight(N_EMBD_PER_LAYER, N_EMBD))
        writer.add_tensor(f"{prefix}.proj.weight", weight(N_EMBD, N_EMBD_PER_LAYER))
        writer.add_tensor(f"{prefix}.post_norm.weight", norm(N_EMBD))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


# -- qwen2 ------------------------------------------------------------------------------------------

QWEN25_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""
"""Qwen2.5's chat template, as the real Qwen2.5-Coder-1.5B-Instruct GGUF's metadata holds it
(``tokenizer.chat_template``): with no system message it writes a default system turn ("You are
Qwen, created by Alibaba Cloud. ..."), so its first user turn opens with more than the second."""

QWEN_CONTROL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
QWEN_WORDS = (
    "Ġthe", "Ġis", "system", "user", "assistant", "skill_name", "final_answer", "arguments",
    '{"', '":', 'Ġ"', '",', "Ġ{", "}}", '"}',
)  # fmt: skip
QWEN_EMBD = 64
QWEN_HEADS = 4
QWEN_HEADS_KV = 2
QWEN_LAYERS = 2
QWEN_FF = 128


def _byte_chars() -> list[str]:
    """GPT-2's byte-level alphabet: the character each of the 256 bytes is written as (a space
    is ``Ġ``, a newline ``Ċ``), as a ``gpt2`` tokenizer's vocabulary spells them."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars: dict[int, str] = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def build_qwen2_gguf(path: Path, *, seed: int = 2) -> Path:
    """Write a tiny random-weight model of llama.cpp's ``qwen2`` architecture (biased q/k/v
    projections, a byte-level BPE ``gpt2`` tokenizer with Qwen's pre-tokenizer, ChatML control
    tokens and Qwen2.5's real chat template) to ``path`` and return it."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens = _byte_chars()
    types = [int(gguf.TokenType.NORMAL)] * len(tokens)
    merges: list[str] = []
    known = set(tokens)
    for word in QWEN_WORDS:
        piece = word[0]
        for char in word[1:]:
            merged = piece + char
            if merged not in known:
                merges.append(f"{piece} {char}")
                tokens.append(merged)
                types.append(int(gguf.TokenType.NORMAL))
                known.add(merged)
            piece = merged
    for text in QWEN_CONTROL:
        tokens.append(text)
        types.append(int(gguf.TokenType.CONTROL))
    n_vocab = len(tokens)

    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_name("tiny-qwen2-test")
    writer.add_context_length(4096)
    writer.add_embedding_length(QWEN_EMBD)
    writer.add_block_count(QWEN_LAYERS)
    writer.add_feed_forward_length(QWEN_FF)
    writer.add_head_count(QWEN_HEADS)
    writer.add_head_count_kv(QWEN_HEADS_KV)
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_pad_token_id(tokens.index("<|endoftext|>"))
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_add_bos_token(False)
    writer.add_chat_template(QWEN25_TEMPLATE)

    def weight(*shape: int, scale: float = 0.05) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def norm(size: int) -> np.ndarray:
        return (1.0 + rng.standard_normal(size) * 0.01).astype(np.float32)

    head = QWEN_EMBD // QWEN_HEADS
    writer.add_tensor("token_embd.weight", weight(n_vocab, QWEN_EMBD, scale=0.5))
    writer.add_tensor("output_norm.weight", norm(QWEN_EMBD))
    for il in range(QWEN_LAYERS):
        prefix = f"blk.{il}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", norm(QWEN_EMBD))
        writer.add_tensor(f"{prefix}.attn_q.weight", weight(QWEN_EMBD, QWEN_EMBD))
        writer.add_tensor(f"{prefix}.attn_q.bias", weight(QWEN_EMBD))
        writer.add_tensor(f"{prefix}.attn_k.weight", weight(head * QWEN_HEADS_KV, QWEN_EMBD))
        writer.add_tensor(f"{prefix}.attn_k.bias", weight(head * QWEN_HEADS_KV))
        writer.add_tensor(f"{prefix}.attn_v.weight", weight(head * QWEN_HEADS_KV, QWEN_EMBD))
        writer.add_tensor(f"{prefix}.attn_v.bias", weight(head * QWEN_HEADS_KV))
        writer.add_tensor(f"{prefix}.attn_output.weight", weight(QWEN_EMBD, QWEN_EMBD))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", norm(QWEN_EMBD))
        writer.add_tensor(f"{prefix}.ffn_gate.weight", weight(QWEN_FF, QWEN_EMBD))
        writer.add_tensor(f"{prefix}.ffn_up.weight", weight(QWEN_FF, QWEN_EMBD))
        writer.add_tensor(f"{prefix}.ffn_down.weight", weight(QWEN_EMBD, QWEN_FF))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
