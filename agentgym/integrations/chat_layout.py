"""The tokens around a model turn, by one rule for every trainer: the chat template's own.

A trainer's episode is one token stream: the chat-templated prompt, then model turns (sampled)
and observations (tokenized here). Both trainer integrations build it with this one class, so
the same episode and tokenizer give the same tokens under verl and TRL:

* the prompt is the template's rendering of the first messages, up to the assistant header;
* an observation is the template's rendering of one more message, taken after the end-of-turn
  token that closed the model's turn: render ``[user, assistant]`` and the same plus the
  observation, trim the first to its last end-of-turn token and keep what the second adds
  after it. This is TRL's rule for tool results (``GRPOTrainer._get_tool_suffix_ids``), so the
  separator a template writes after ``<|im_end|>`` (ChatML's ``\\n``) belongs to the observation;
* a turn the model did not end itself (cut at a stop string) is closed with the template's
  end-of-turn token, at loss mask 0, when a message follows it (``turns.observe``).

Which token ends a turn: every id the model's generation config lists (Qwen2.5-Instruct lists
``<|im_end|>`` and ``<|endoftext|>``) and the tokenizer's EOS; the template's own is the one its
rendering of an assistant message ends with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["ChatLayout", "end_of_turn_ids", "generation_eos_of"]

_PROBE = ({"role": "user", "content": "x"}, {"role": "assistant", "content": "y"})
"""A conversation whose last turn is the model's: what an observation follows."""


def end_of_turn_ids(tokenizer: Any, generation_eos: int | Iterable[int] | None = None) -> tuple[int, ...]:
    """Every token id that ends a model turn: the tokenizer's EOS, then the generation config's ids."""
    ids: list[int] = []
    if isinstance(getattr(tokenizer, "eos_token_id", None), int):
        ids.append(tokenizer.eos_token_id)
    extra = [generation_eos] if isinstance(generation_eos, int) else list(generation_eos or ())
    ids += [int(i) for i in extra if isinstance(i, int) and i not in ids]
    return tuple(ids)


def generation_eos_of(model_path: Any) -> int | list[int] | None:
    """The end-of-sequence ids a model folder's generation config lists (what vLLM stops on), or
    None when there is no readable one (a hub id not yet downloaded, no generation config)."""
    if not isinstance(model_path, str) or not model_path:
        return None
    try:
        from transformers import GenerationConfig

        return GenerationConfig.from_pretrained(model_path, local_files_only=True).eos_token_id
    except Exception:  # no config on this machine: the tokenizer's EOS alone ends turns
        return None


class ChatLayout:
    """The prompt and observation tokens of one tokenizer and chat template (module docstring)."""

    def __init__(self, tokenizer: Any, *, observation_role: str = "user",
                 template_kwargs: Mapping[str, Any] | None = None,
                 generation_eos: int | Iterable[int] | None = None) -> None:
        self.tokenizer = tokenizer
        self.observation_role = observation_role
        self.template_kwargs = dict(template_kwargs or {})
        self.stop_ids = end_of_turn_ids(tokenizer, generation_eos)
        """The ids that end a model turn (sampling stops at any of them)."""
        probe = self.render(list(_PROBE), add_generation_prompt=False)
        self._trim = _after_last(probe, self.stop_ids[:1]) or _after_last(probe, self.stop_ids)
        self.end_of_turn: int | None = probe[self._trim - 1] if self._trim else None
        """The token the template closes a model turn with (None: it writes none that ends turns)."""
        self._probe = probe[:self._trim] if self._trim else probe

    def render(self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool) -> list[int]:
        """The template's token ids for ``messages``."""
        ids = self.tokenizer.apply_chat_template(list(messages), tokenize=True, return_dict=False,
                                                 add_generation_prompt=add_generation_prompt, **self.template_kwargs)
        if isinstance(ids, Mapping):  # some tokenizers answer a dict whatever return_dict says
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    def prompt_ids(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """The prompt: ``messages`` rendered up to the model's turn."""
        return self.render(messages, add_generation_prompt=True)

    def observation_ids(self, observation: str) -> list[int]:
        """The observation as the next message, after the end-of-turn token, up to the model's next turn."""
        full = self.render([*_PROBE, {"role": self.observation_role, "content": observation}],
                           add_generation_prompt=True)
        if full[:len(self._probe)] != self._probe:
            raise ValueError("the chat template renders an earlier turn differently once a message follows it; "
                             "agentgym cannot append observations to a running token stream with it")
        return full[len(self._probe):]

    def model_ids(self, tokens: list[int], logprobs: list[float | None] | None,
                  text: str) -> tuple[list[int], list[float | None] | None]:
        """A sampled turn's tokens, as sampled (the chat is never re-tokenized)."""
        return tokens, logprobs

    def ends_turn(self, tokens: Sequence[int]) -> bool:
        """Whether a model turn ends with a token that ends turns (else it is still open)."""
        return bool(tokens) and tokens[-1] in self.stop_ids


def _after_last(ids: list[int], wanted: Sequence[int]) -> int:
    """The index just past the last of ``wanted`` in ``ids`` (0: none)."""
    for i in range(len(ids) - 1, -1, -1):
        if ids[i] in wanted:
            return i + 1
    return 0
