"""Sampling for the rollout: every live episode's turn sampled in one ``generate`` call.

Each episode is a coroutine that awaits ``sample``; once every live episode waits (or has
finished), the pending turns are left-padded into one batch and sampled together with the
trainer's sampling options: TRL's own generation (``model.generate``), or TRL's vLLM back end
when the trainer uses vLLM (untested here: it needs a GPU). A row ends at its end-of-turn token,
at one of its stop strings, or at its token budget. The chat template renders the prompt and, one message at a time, each
observation (the chat is never re-tokenized: tokens the model sampled stay as sampled).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import torch
from transformers import LogitsProcessor, LogitsProcessorList, StoppingCriteria, StoppingCriteriaList

from agentgym.errors import ConfigError

__all__ = ["TurnSampler"]

_STOP_TAIL_TOKENS = 16  # tokens decoded from a row's end to look for a stop string


class TurnSampler:
    """Batched sampling of model turns with the trainer's model, tokenizer and sampling options."""

    def __init__(self, trainer: Any, *, constraint: Any = None) -> None:
        self.vllm = getattr(trainer, "vllm_generation", None) if getattr(trainer, "use_vllm", False) else None
        if self.vllm is not None and constraint is not None:
            raise ConfigError("constraint", type(constraint).__name__, "None with use_vllm=True (the constraint is "
                              "a logits processor of TRL's own generation)")
        processing = trainer.processing_class
        self.tokenizer = getattr(processing, "tokenizer", processing)
        self.model = trainer.accelerator.unwrap_model(trainer.model)
        self.device = trainer.accelerator.device
        self.constraint = constraint
        self.template_kwargs = dict(_as_dict(getattr(trainer.args, "chat_template_kwargs", None)))
        self.sampling = _sampling_kwargs(trainer.args)
        self.live = 0
        self._pending: list[tuple[list[int], int, tuple[str, ...], asyncio.Future]] = []
        self._bases: dict[str, str] = {}

    # -- chat rendering --------------------------------------------------------------------
    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        return self._ids(self._render(messages, add_generation_prompt=True))

    def observation_ids(self, observation: str, role: str) -> list[int]:
        """The observation as one more chat message, up to the next assistant turn's header."""
        base = self._bases.get(role)
        if base is None:
            base = self._bases[role] = self._render(_PROBE, add_generation_prompt=False)
        full = self._render([*_PROBE, {"role": role, "content": observation}], add_generation_prompt=True)
        delta = full[len(base):] if full.startswith(base) else \
            self._render([{"role": role, "content": observation}], add_generation_prompt=True)
        return self._ids(delta)

    def decode(self, tokens: Sequence[int]) -> str:
        return self.tokenizer.decode(list(tokens), skip_special_tokens=True)

    def _render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt,
                                                  **self.template_kwargs)

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # -- batching --------------------------------------------------------------------------
    async def sample(self, prefix: list[int], max_tokens: int, stops: tuple[str, ...]) -> list[int]:
        """Tokens sampled after ``prefix`` (at most ``max_tokens``), batched with the other episodes."""
        future = asyncio.get_running_loop().create_future()
        self._pending.append((list(prefix), max(1, int(max_tokens)), tuple(stops), future))
        self._flush_if_ready()
        return await future

    def finished(self) -> None:
        """An episode is over: the others no longer wait for it."""
        self.live -= 1
        self._flush_if_ready()

    def _flush_if_ready(self) -> None:
        if not self._pending or len(self._pending) < self.live:
            return
        batch, self._pending = self._pending, []
        try:
            outputs = self._generate(batch)
        except BaseException as exc:  # every waiting episode sees the error
            for *_, future in batch:
                future.set_exception(exc)
            return
        for (*_, future), tokens in zip(batch, outputs):
            future.set_result(tokens)

    def _generate(self, batch: list[tuple[list[int], int, tuple[str, ...], Any]]) -> list[list[int]]:
        if self.vllm is not None:
            return self._generate_vllm(batch)
        pad, eos = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id
        width = max(len(prefix) for prefix, *_ in batch)
        rows = [[pad] * (width - len(prefix)) + prefix for prefix, *_ in batch]
        attention = [[0] * (width - len(prefix)) + [1] * len(prefix) for prefix, *_ in batch]
        limits = [limit for _, limit, _, _ in batch]
        stopper = _StopStrings(self.decode, [stops for _, _, stops, _ in batch], width)
        processors = LogitsProcessorList()
        if self.constraint is not None:
            processors.append(_Constrain(self.constraint, [prefix for prefix, *_ in batch], width))
        training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=torch.tensor(rows, device=self.device),
                    attention_mask=torch.tensor(attention, device=self.device),
                    max_new_tokens=max(limits), logits_processor=processors,
                    stopping_criteria=StoppingCriteriaList([stopper]), pad_token_id=pad, eos_token_id=eos,
                    **self.sampling)
        finally:
            self.model.train(training)
        new = out[:, width:].tolist()
        return [_until_end(tokens, eos, stopper.ended_at[i], limits[i]) for i, tokens in enumerate(new)]


    def _generate_vllm(self, batch: list[tuple[list[int], int, tuple[str, ...], Any]]) -> list[list[int]]:
        """The same round through TRL's vLLM back end (server or colocate), the stop strings kept in
        the output. Needs a GPU: not tested here."""
        limits = [limit for _, limit, _, _ in batch]
        stops = sorted({stop for _, _, row_stops, _ in batch for stop in row_stops})
        saved = self.vllm.max_completion_length, self.vllm.generation_kwargs
        self.vllm.max_completion_length = max(limits)
        if stops:
            self.vllm.generation_kwargs = {**(saved[1] or {}), "stop": stops, "include_stop_str_in_output": True}
        try:
            _, completions, _, _ = self.vllm.generate([prefix for prefix, *_ in batch], None, num_generations=1)
        finally:
            self.vllm.max_completion_length, self.vllm.generation_kwargs = saved
        return [_until_end(list(tokens), self.tokenizer.eos_token_id, None, limit)
                for tokens, limit in zip(completions, limits)]


_PROBE = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]


class _StopStrings(StoppingCriteria):
    """Ends each row at its first stop string; remembers where."""

    def __init__(self, decode: Any, stops: list[tuple[str, ...]], width: int) -> None:
        self.decode, self.stops, self.width = decode, stops, width
        self.ended_at: list[int | None] = [None] * len(stops)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: Any) -> torch.BoolTensor:
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        length = input_ids.shape[1] - self.width
        for row, stops in enumerate(self.stops):
            if self.ended_at[row] is not None:
                done[row] = True
                continue
            if not stops:
                continue
            tail = self.decode(input_ids[row, max(self.width, input_ids.shape[1] - _STOP_TAIL_TOKENS):].tolist())
            if tail.rstrip().endswith(stops):
                self.ended_at[row], done[row] = length, True
        return done


class _Constrain(LogitsProcessor):
    """Applies a ``TurnConstraint``: tokens it does not allow get probability 0."""

    def __init__(self, constraint: Any, prefixes: list[list[int]], width: int) -> None:
        self.constraint, self.prefixes, self.width = constraint, prefixes, width

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        for row, prefix in enumerate(self.prefixes):
            allowed = self.constraint.allowed(prefix, input_ids[row, self.width:].tolist())
            if allowed is None:
                continue
            allowed = [t for t in allowed if 0 <= t < scores.shape[1]]
            if not allowed:  # nothing allowed would make the distribution NaN: leave the row free
                continue
            keep = scores[row, allowed].clone()
            scores[row, :] = float("-inf")
            scores[row, allowed] = keep
        return scores


def _until_end(tokens: list[int], eos: int | None, stopped: int | None, limit: int) -> list[int]:
    """A row's own tokens: through its end-of-turn token or stop string, within its budget."""
    end = len(tokens)
    if isinstance(eos, int) and eos in tokens:
        end = tokens.index(eos) + 1
    if stopped is not None:
        end = min(end, stopped)
    return tokens[: min(end, limit)]


def _sampling_kwargs(args: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"do_sample": True, "temperature": args.temperature, "top_p": args.top_p,
                              "repetition_penalty": args.repetition_penalty}
    if args.top_k:
        kwargs["top_k"] = args.top_k
    else:
        kwargs["top_k"] = None
    if args.min_p is not None:
        kwargs["min_p"] = args.min_p
    kwargs.update(_as_dict(args.generation_kwargs))
    return kwargs


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        import json

        return json.loads(value)
    return dict(value or {})
