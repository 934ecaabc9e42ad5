"""A tiny policy built in memory: a word-level tokenizer trained on an env's text and a random Qwen2.

For CPU runs, tests and the ``trl_*`` recipes when no model path is given: nothing is downloaded.
The tokenizer keeps every action tag whole (``<search>``, ``</answer>``...) and has a chat
template with tool support, so TRL's conversational and tool-calling paths run on it.

Its tokens are words with the space before them (`` Hollymont``), single punctuation marks and
whitespace runs, and decoding concatenates them: text made of known tokens decodes to exactly
itself, so a model can write ``CitySearch[Texas]`` or JSON that the envs parse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["TAGS", "PIECES", "CHAT_TEMPLATE", "RESPONSE_SCHEMA", "word_tokenizer", "tiny_qwen2", "env_texts"]

TAGS = ("<search>", "</search>", "<answer>", "</answer>", "<information>", "</information>", "<think>", "</think>",
        "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
"""Kept whole by the tokenizer (the envs' action and observation tags)."""

EOS, PAD, UNK = "<|end|>", "<|pad|>", "<|unk|>"
ROLES = ("<|system|>", "<|user|>", "<|assistant|>", "<|tool|>")

CHAT_TEMPLATE = (
    "{%- if tools %}<|system|> tools : {% for tool in tools %}{{ tool['function']['name'] if tool['function'] "
    "is defined else tool['name'] }} {% endfor %}<|end|>{% endif -%}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}<|assistant|> {{ message['content'] or '' }}"
    "{%- if message['tool_calls'] is defined and message['tool_calls'] %}{% for call in message['tool_calls'] %}"
    " <tool_call> {{ {'name': call['function']['name'], 'arguments': call['function']['arguments']} | tojson }}"
    " </tool_call>"
    "{%- endfor %}{% endif %}<|end|>"
    "{%- elif message['role'] == 'tool' %}<|tool|> <tool_response> {{ message['content'] }} </tool_response><|end|>"
    "{%- else %}<|{{ message['role'] }}|> {{ message['content'] }}<|end|>{% endif %}"
    "{%- endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
"""Role-tagged turns ended by ``<|end|>``; tools are listed in a system turn; tool calls are
``<tool_call> {"name": ..., "arguments": {...}} </tool_call>`` and results ``<tool_response>`` blocks."""

RESPONSE_SCHEMA = {
    "x-regex": r"^(?P<content>(?:(?!<tool_call>)[\s\S])*?)\s*"
               r"(?P<tool_calls>(?:<tool_call>(?:(?!</tool_call>)[\s\S])+</tool_call>\s*)+)?\s*(?:<\|end\|>|$)",
    "type": "object",
    "properties": {
        "role": {"const": "assistant"},
        "content": {"type": "string"},
        "tool_calls": {
            "type": "array",
            "x-regex-iterator": r"<tool_call>\s*(.+?)\s*</tool_call>",
            "items": {"x-parser": "json", "x-parser-args": {"transform": "{type: 'function', function: @}"},
                      "type": "object",
                      "properties": {"type": {"const": "function"},
                                     "function": {"type": "object",
                                                  "properties": {"name": {"type": "string"},
                                                                 "arguments": {"type": "object",
                                                                               "additionalProperties": {}}}}}},
        },
    },
}
"""How transformers' ``parse_response`` reads an assistant turn of ``CHAT_TEMPLATE`` back into
content and tool calls (TRL's tool-calling loop needs it)."""


PIECES = r" ?[^\W_]+| ?[^\w\s]| ?_|\s+"
"""The pre-tokenizer's pieces: a word (letters and digits) or one punctuation mark, each with the
space before it, or a run of whitespace."""


def word_tokenizer(texts: Iterable[str], *, extra_words: Sequence[str] = (), max_vocab: int = 4000) -> Any:
    """A word-level ``PreTrainedTokenizerFast`` trained on ``texts`` and ``extra_words`` (``PIECES``;
    tags and chat markers whole) that decodes exactly, with ``CHAT_TEMPLATE``."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(PIECES), behavior="isolated")
    core.decoder = decoders.Fuse()  # the pieces keep their spaces: concatenating them is exact
    specials = [PAD, UNK, EOS, *ROLES]
    trainer = trainers.WordLevelTrainer(vocab_size=max_vocab, special_tokens=specials, min_frequency=1)
    whole = re.compile("|".join(re.escape(t) for t in (*specials, *TAGS)))  # split out as encoding does
    core.train_from_iterator((part for text in (*texts, *extra_words) for part in whole.split(text)), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token=EOS, pad_token=PAD, unk_token=UNK,
                                        additional_special_tokens=list(ROLES), clean_up_tokenization_spaces=False)
    tokenizer.add_tokens(list(TAGS))
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_schema = RESPONSE_SCHEMA
    return tokenizer


def tiny_qwen2(tokenizer: Any, *, hidden_size: int = 64, layers: int = 2, heads: int = 4, seed: int = 0) -> Any:
    """A randomly initialised ``Qwen2ForCausalLM`` sized for CPU runs, over ``tokenizer``'s vocabulary."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                         max_position_embeddings=2048, tie_word_embeddings=True,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id)  # None: the tokenizer's (trainers align them, warning)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model


def env_texts(env: Any, seeds: Iterable[int], *, actions: Sequence[str] = ()) -> list[str]:
    """Text an env shows for these seeds (its prompts, and its replies to ``actions``), to train
    a tokenizer on."""
    texts: list[str] = []
    for seed in seeds:
        observation, _ = env.reset(seed=seed)
        texts.append(observation)
        for action in actions:
            observation, _, terminated, truncated, _ = env.step(action)
            texts.append(observation)
            if terminated or truncated:
                break
    return texts
