"""Sampling for the rollout: every live episode's turn sampled in one ``generate`` call.

Each episode is a coroutine that awaits ``sample``; once every live episode waits (or has
finished), the pending turns are left-padded into one batch and sampled together with the
trainer's sampling options: TRL's own generation (``model.generate``), or TRL's vLLM back end
(``trainer.vllm_generation``) when the trainer uses vLLM. A row ends at an end-of-turn token
(every id TRL's ``eos_token_ids`` lists: the tokenizer's and the generation config's), at one of
its stop strings (kept, with no end-of-turn token after it, as vLLM returns it), or at its budget.

Both paths return the log-prob of each sampled token under the distribution it was drawn from
(temperature, top-k, top-p, min-p applied): vLLM's own, or recorded during ``generate``. TRL's
importance-sampling correction (on by default with vLLM) divides by them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from agentgym.integrations.trl._guard import require_trl

require_trl()  # without torch: the extra's message, not a bare ModuleNotFoundError

import torch  # noqa: E402
from transformers import LogitsProcessor, LogitsProcessorList, StoppingCriteria, StoppingCriteriaList
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from agentgym.errors import ConfigError

__all__ = ["TurnSampler"]

_STOP_TAIL_TOKENS = 16  # tokens decoded from a row's end to look for a stop string

Sampled = tuple[list[int], list[float]]


class TurnSampler:
    """Batched sampling of model turns with the trainer's model, tokenizer and sampling options."""

    def __init__(self, trainer: Any, stop_ids: Sequence[int], *, constraint: Any = None) -> None:
        self.vllm = getattr(trainer, "vllm_generation", None) if getattr(trainer, "use_vllm", False) else None
        if self.vllm is not None and constraint is not None:
            raise ConfigError("constraint", type(constraint).__name__, "None with use_vllm=True (the constraint is "
                              "a logits processor of TRL's own generation)")
        processing = trainer.processing_class
        self.tokenizer = getattr(processing, "tokenizer", processing)
        self.model = trainer.accelerator.unwrap_model(trainer.model)
        self.device = trainer.accelerator.device
        self.constraint = constraint
        self.stop_ids = list(stop_ids)
        self.sampling, self.warpers = _sampling(trainer.args)
        self.live = 0
        self._pending: list[tuple[list[int], int, tuple[str, ...], asyncio.Future]] = []

    def decode(self, tokens: Sequence[int]) -> str:
        return self.tokenizer.decode(list(tokens), skip_special_tokens=True)

    # -- batching --------------------------------------------------------------------------
    async def sample(self, prefix: list[int], max_tokens: int, stops: tuple[str, ...]) -> Sampled:
        """Tokens sampled after ``prefix`` (at most ``max_tokens``) and their log-probs, batched with
        the other episodes."""
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
        for (*_, future), sampled in zip(batch, outputs):
            future.set_result(sampled)

    def _generate(self, batch: list[tuple[list[int], int, tuple[str, ...], Any]]) -> list[Sampled]:
        if self.vllm is not None:
            return self._generate_vllm(batch)
        pad = self.tokenizer.pad_token_id
        width = max(len(prefix) for prefix, *_ in batch)
        rows = [[pad] * (width - len(prefix)) + prefix for prefix, *_ in batch]
        attention = [[0] * (width - len(prefix)) + [1] * len(prefix) for prefix, *_ in batch]
        limits = [limit for _, limit, _, _ in batch]
        stopper = _StopStrings(self.decode, [stops for _, _, stops, _ in batch], width)
        recorder = _LogProbs()
        processors = LogitsProcessorList()
        if self.constraint is not None:
            processors.append(_Constrain(self.constraint, [prefix for prefix, *_ in batch], width))
        processors.extend([*self.warpers, recorder])  # the recorder sees the distribution sampled from
        training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=torch.tensor(rows, device=self.device),
                    attention_mask=torch.tensor(attention, device=self.device),
                    max_new_tokens=max(limits), logits_processor=processors,
                    stopping_criteria=StoppingCriteriaList([stopper]), pad_token_id=pad,
                    eos_token_id=self.stop_ids, **self.sampling)
        finally:
            self.model.train(training)
        new = out[:, width:]
        logprobs = recorder.of(new)
        return [_until_end(tokens, logprobs[i], self.stop_ids, stopper.ended_at[i], limits[i])
                for i, tokens in enumerate(new.tolist())]

    def _generate_vllm(self, batch: list[tuple[list[int], int, tuple[str, ...], Any]]) -> list[Sampled]:
        """The same round through TRL's vLLM back end (server or colocate), the stop strings kept in
        the output, and vLLM's log-probs of the sampled tokens."""
        limits = [limit for _, limit, _, _ in batch]
        stops = sorted({stop for _, _, row_stops, _ in batch for stop in row_stops})
        saved = self.vllm.max_completion_length, self.vllm.generation_kwargs
        self.vllm.max_completion_length = max(limits)
        if stops:
            self.vllm.generation_kwargs = {**(saved[1] or {}), "stop": stops, "include_stop_str_in_output": True}
        try:
            _, completions, logprobs, _ = self.vllm.generate([prefix for prefix, *_ in batch], None,
                                                             num_generations=1)
        finally:
            self.vllm.max_completion_length, self.vllm.generation_kwargs = saved
        return [_until_end(list(tokens), [_first(lp) for lp in row], self.stop_ids, None, limit)
                for tokens, row, limit in zip(completions, logprobs or [[]] * len(completions), limits)]


def _first(entry: Any) -> float:
    """The sampled token's log-prob of a vLLM entry (a top-k list whose first is the sampled one)."""
    value = entry[0] if isinstance(entry, (list, tuple)) else entry
    return float("nan") if value is None else float(value)


class _LogProbs(LogitsProcessor):
    """Records, for each row, the log-prob of the token sampled at each step under the processed
    distribution (run last, after the warpers); one step's distribution is kept at a time."""

    def __init__(self) -> None:
        self.steps: list[torch.Tensor] = []
        self._last: torch.Tensor | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self._take(input_ids[:, -1])
        self._last = torch.log_softmax(scores.float(), dim=-1)
        return scores

    def _take(self, chosen: torch.Tensor) -> None:
        if self._last is not None:
            self.steps.append(self._last.gather(1, chosen.view(-1, 1)).squeeze(1))
            self._last = None

    def of(self, new: torch.Tensor) -> list[list[float]]:
        """Per row, the log-probs of its new tokens (the last step's taken from the output)."""
        if new.shape[1] > len(self.steps):
            self._take(new[:, len(self.steps)])
        if not self.steps:
            return [[] for _ in range(new.shape[0])]
        return torch.stack(self.steps, dim=1).tolist()


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


def _until_end(tokens: list[int], logprobs: list[float], stop_ids: Sequence[int], stopped: int | None,
               limit: int) -> Sampled:
    """A row's own tokens and log-probs: through its end-of-turn token or stop string, within its budget."""
    end = next((i + 1 for i, t in enumerate(tokens) if t in stop_ids), len(tokens))
    if stopped is not None:
        end = min(end, stopped)
    end = min(end, limit)
    values = list(logprobs[:end])
    return tokens[:end], values + [float("nan")] * (end - len(values))


def _sampling(args: Any) -> tuple[dict[str, Any], list[LogitsProcessor]]:
    """``generate``'s options and the warpers, in the order ``generate`` would apply them; passed
    explicitly (``generate``'s own are switched off) so that the log-prob recorder runs after them."""
    warpers: list[LogitsProcessor] = []
    if args.temperature is not None and args.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(args.temperature))
    if args.top_k:
        warpers.append(TopKLogitsWarper(top_k=args.top_k))
    if args.top_p is not None and args.top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=args.top_p))
    if args.min_p is not None:
        warpers.append(MinPLogitsWarper(min_p=args.min_p))
    kwargs: dict[str, Any] = {"do_sample": True, "temperature": 1.0, "top_p": 1.0, "top_k": None, "min_p": None,
                              "repetition_penalty": args.repetition_penalty}
    kwargs.update(_as_dict(args.generation_kwargs))
    return kwargs, warpers


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        import json

        return json.loads(value)
    return dict(value or {})
