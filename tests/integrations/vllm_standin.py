"""A stand-in for TRL's vLLM back end (``trl.generation.vllm_generation.VLLMGeneration``): vLLM needs
a GPU, so this samples with the trainer's own model on the CPU and answers as vLLM does where the
rollout depends on it:

* ``generate(prompts, images, num_generations)`` returns ``(prompt_ids, completion_ids, logprobs,
  logprob_token_ids)``, the log-probs per token as a one-element list (``logprobs=0``: the sampled
  token's), processed (after temperature), as ``--logprobs-mode processed_logprobs`` gives them;
* a completion ends right after its first stop string (``generation_kwargs["stop"]`` with
  ``include_stop_str_in_output``), with no end-of-turn token after it, or at an end-of-turn token,
  or at ``max_completion_length``; vLLM's ``finish_reason``/``stop_reason`` (``stop`` with the
  string) are kept in ``finished`` for the tests;
* ``sync_weights`` is counted (the model is shared, so there is nothing to copy).

``shift`` adds a constant to every reported log-prob: a control that must move TRL's importance
sampling ratio. ``constraint_factory(tokenizer)``, when set, builds a ``TurnConstraint`` applied as
a logits processor configured at engine start (vLLM V1's custom logits processors), so a tiny
random model writes well-formed actions; the log-probs are then the processed ones, as TRL's
colocated vLLM (``logprobs_mode="processed_logprobs"``) reports them.
"""

from __future__ import annotations

from typing import Any

import torch


class VLLMStandIn:
    shift = 0.0
    constraint_factory = None

    def __init__(self, *, model: Any, processing_class: Any, temperature: float = 1.0,
                 max_completion_length: int = 64, generation_kwargs: Any = None, **_: Any) -> None:
        self.model, self.tokenizer = model, getattr(processing_class, "tokenizer", processing_class)
        self.temperature, self.max_completion_length = temperature or 1.0, max_completion_length
        self.generation_kwargs = dict(generation_kwargs or {})
        self.synced, self.calls, self.finished = 0, 0, []
        factory = type(self).constraint_factory
        self.constraint = factory(self.tokenizer) if factory is not None else None
        eos = model.generation_config.eos_token_id
        self.eos_ids = set([eos] if isinstance(eos, int) else list(eos or [])) | {self.tokenizer.eos_token_id}

    def sync_weights(self) -> None:
        self.synced += 1

    def generate(self, prompts: list[list[int]], images: Any, num_generations: int, profiler: Any = None) -> tuple:
        self.calls += 1
        stops = list(self.generation_kwargs.get("stop") or [])
        completions, logprobs = [], []
        for prompt in prompts:
            for _ in range(num_generations):
                ids, lps = self._sample(list(prompt), stops)
                completions.append(ids)
                logprobs.append([[lp + self.shift] for lp in lps])
        return [p for p in prompts for _ in range(num_generations)], completions, logprobs, None

    @torch.no_grad()
    def _sample(self, prompt: list[int], stops: list[str]) -> tuple[list[int], list[float]]:
        ids: list[int] = []
        lps: list[float] = []
        training = self.model.training
        self.model.eval()
        try:
            while len(ids) < self.max_completion_length:
                logits = self.model(torch.tensor([prompt + ids])).logits[0, -1].float() / self.temperature
                allowed = self.constraint.allowed(prompt, ids) if self.constraint is not None else None
                if allowed:
                    keep = logits[allowed].clone()
                    logits = torch.full_like(logits, float("-inf"))
                    logits[allowed] = keep
                dist = torch.log_softmax(logits, dim=-1)
                token = int(torch.multinomial(dist.exp(), 1))
                ids.append(token)
                lps.append(float(dist[token]))
                if token in self.eos_ids:
                    self.finished.append(("stop", token))
                    break
                text = self.tokenizer.decode(ids, skip_special_tokens=True)
                hit = next((s for s in stops if text.endswith(s)), None)
                if hit is not None:  # vLLM stops here, keeps the string, appends no end-of-turn token
                    self.finished.append(("stop", hit))
                    break
            else:
                self.finished.append(("length", None))
        finally:
            self.model.train(training)
        return ids, lps
