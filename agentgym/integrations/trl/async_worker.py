"""agentgym episodes in TRL's ``AsyncGRPOTrainer`` (``trl.experimental.async_grpo``, TRL 1.16).

TRL's async trainer trains from a queue that a rollout worker fills from a spawned process, which
samples from a vLLM server over HTTP. ``AgentGymRolloutWorker`` is that worker, playing agentgym
envs by the turn engine ``rollout_func`` uses (``rollouts.play_rollout``, ``turns``, the one chat
layout), so a task plays the same under both TRL trainers and under verl::

    worker = AgentGymRolloutWorker.for_trainer(args, "SearchQA-v0", model_name=path, processing_class=tokenizer,
                                               dataset=task_dataset("SearchQA-v0", options=...),
                                               reward="prs/short", max_turns=4)
    trainer = AsyncGRPOTrainer(model=path, args=args, train_dataset=dataset, processing_class=tokenizer,
                               rollout_worker=worker)

Per rollout: one training row, the prompt and every model turn and observation after it, the
loss mask 1 exactly on the sampled tokens, the sampling log-probs vLLM returned (stop strings
passed to vLLM as the env declares them), and the env's shaped reward as TRL's rollout reward.
A rollout left out of training (something outside the model failed, every term abstained) gives
no row and a ``None`` reward, which TRL's worker leaves out of its group's baseline; the failure
budget (``max_failed_share``) stops the worker, and with it training, with ``TrainingAborted``.
Scheduled rewards follow the policy version the worker samples with (TRL's ``model_version``,
one per optimizer step).

``environment_factory`` needs nothing from here: agentgym's ``SearchTool`` and
``TravelPlannerTools`` (``agentgym.integrations.trl.tools``) are TRL environments for both trainers.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.errors import ConfigError
from agentgym.integrations.chat_layout import ChatLayout
from agentgym.integrations.rollouts import Clock, RolloutLayout, play_rollout
from agentgym.integrations.trl._guard import require_trl
from agentgym.integrations.trl.rollout import AgentGymRollout, task_of
from agentgym.integrations.turns import RolloutResult, TokenStream, TurnRules, score_episode

require_trl()

from trl.experimental.async_grpo.async_rollout_worker import (  # noqa: E402
    AsyncRolloutWorker,
    TrainingSequence,
    _AsyncRolloutLoop,
)

__all__ = ["AgentGymRolloutWorker", "AgentGymRolloutLoop"]

_SETTINGS = ("env_kwargs", "reward", "max_turns", "response_length", "observation_role", "stop_at_action",
             "unfinished_reward", "max_failed_share", "failure_window", "env_threads")
"""``rollout_func``'s settings the async worker takes (no constraint, no Search-R1 layout: vLLM samples)."""


class AgentGymRolloutLoop(_AsyncRolloutLoop):
    """TRL's async rollout loop (in the worker's process) with agentgym episodes (module docstring)."""

    _provides_rollout_reward = True

    def __init__(self, *, env_id: str, agentgym: Mapping[str, Any] | None = None, total_steps: int | None = None,
                 **loop_kwargs: Any) -> None:
        super().__init__(**loop_kwargs)
        settings = dict(agentgym or {})
        unknown = sorted(set(settings) - set(_SETTINGS))
        if unknown:
            raise ConfigError(unknown[0], settings[unknown[0]], _SETTINGS)
        self.episodes = AgentGymRollout(env_id, **settings)
        self.total_steps = total_steps
        self.layout = ChatLayout(self.tokenizer, observation_role=self.episodes.observation_role,
                                 template_kwargs=self.chat_template_kwargs, generation_eos=self.eos_token_ids)
        self.rules = TurnRules(response_length=self.episodes.response_length or self.max_tokens,
                               stop_ids=self.layout.stop_ids, end_of_turn=self.layout.end_of_turn,
                               max_turns=self.episodes.max_turns)
        self._reasons: set[str] = set()
        self.reward_func_names.append("agentgym_reward")  # the rollout reward's column, as TRL names it per sample

    async def _generate_one(self, prompt: Any, tool_dict: Any, tools: Any, group_id: int = 0) -> tuple:
        task = self.episodes._task(task_of(prompt))
        stream, result = TokenStream(messages=[]), RolloutResult()
        clock = Clock(self.model_version, self.total_steps)
        await play_rollout(self, task, stream, result, pool=self.episodes._pool, layout=RolloutLayout(self.layout),
                           rules=self.rules, clock=clock, stop_at_action=self.episodes.stop_at_action,
                           pass_training_step=True, env_threads=self.episodes.env_threads)
        if result.fatal:  # the user's configuration: the worker (and training) stops with its message
            raise result.cause if result.cause is not None else ConfigError("rollout", result.error, "no error")
        self._count(result, clock)
        score, _ = score_episode(result, self.episodes.term_names, unfinished_reward=self.episodes.unfinished_reward)
        completion = stream.messages[1:]
        rows = [] if result.masked else [_training_row(stream)]
        return completion, stream.response_ids, rows, result.actions.count("tool"), 0, \
            None if result.masked else score

    def _count(self, result: RolloutResult, clock: Clock) -> None:
        """The failure budget, and ``agentgym/failed/<reason>`` as shares of the rollouts TRL's trainer
        logs them over (rates: left out for that reason, of every rollout since the reason first showed)."""
        reason = result.left_out_reason
        first_error = result.error or (result.failure.message if result.failure else None)
        self.episodes.budget.record([reason], clock.training_step, first_error=first_error)
        if reason is not None:
            self._reasons.add(reason)
        for seen in self._reasons:
            rate = self._rates[f"agentgym/failed/{seen}"]
            rate[0] += seen == reason
            rate[1] += 1

    # -- the host: vLLM's /v1/completions, the env's stop strings in vLLM's terms ------------------
    async def sample(self, stream: TokenStream, params: dict[str, Any], continued: list[int], max_tokens: int,
                     stops: tuple[str, ...]) -> tuple[list[int], list[float]]:
        payload = {"model": self._request_model, "prompt": stream.token_ids + continued, "max_tokens": max_tokens,
                   "temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k,
                   "repetition_penalty": self.repetition_penalty, "n": 1, "return_token_ids": True, "logprobs": 0,
                   "seed": random.getrandbits(63), "skip_special_tokens": False}
        if self.min_p is not None:
            payload["min_p"] = self.min_p
        if stops:
            payload.update(stop=list(stops), include_stop_str_in_output=True)
        output = await self._retry(lambda: self._post("/v1/completions", payload, self.request_timeout),
                                   max_attempts=30, label="vllm /v1/completions")
        choice = output["choices"][0]
        return list(choice["token_ids"]), [float(lp) for lp in choice["logprobs"]["token_logprobs"]]

    async def step(self, stream: TokenStream, env: Any, text: str) -> Any:  # run by play_rollout on env threads
        return env.step(text)

    def decode(self, tokens: Sequence[int]) -> str:
        return self.tokenizer.decode(list(tokens), skip_special_tokens=True)


def _training_row(stream: TokenStream) -> TrainingSequence:
    prompt = stream.prompt_length
    logprobs = [0.0 if lp is None else float(lp) for lp in stream.logprobs]
    return TrainingSequence(input_ids=list(stream.token_ids), completion_mask=[0] * prompt + list(stream.response_mask),
                            old_log_probs=[0.0] * prompt + logprobs, rollout_id=uuid.uuid4().hex)


class AgentGymRolloutWorker(AsyncRolloutWorker):
    """TRL's async rollout worker, its loop playing agentgym episodes: pass it as ``rollout_worker``."""

    _loop_cls = AgentGymRolloutLoop

    @classmethod
    def for_trainer(cls, args: Any, env_id: str, *, model_name: str, processing_class: Any, dataset: Any,
                    eos_token_ids: Sequence[int] | None = None, reward_funcs: Sequence[Any] = (),
                    **settings: Any) -> AgentGymRolloutWorker:
        """The worker ``AsyncGRPOTrainer`` would build from ``args`` (an ``AsyncGRPOConfig``), playing
        ``env_id`` with ``rollout_func``'s settings (``reward=``, ``max_turns=``, ``env_kwargs=``...)."""
        if eos_token_ids is None:
            eos_token_ids = [processing_class.eos_token_id]
        return cls(
            env_id=env_id, agentgym=settings, total_steps=args.max_steps if args.max_steps > 0 else None,
            model_name=model_name, dataset=dataset, reward_funcs=list(reward_funcs), processing_class=processing_class,
            eos_token_ids=list(eos_token_ids), num_generations=args.num_generations,
            max_inflight_tasks=max(args.max_inflight_tasks, args.num_generations), queue_maxsize=args.queue_maxsize,
            vllm_server_url=args.vllm_server_base_url, max_tokens=args.max_completion_length,
            temperature=args.temperature, top_p=args.top_p, top_k=args.top_k, min_p=args.min_p,
            repetition_penalty=args.repetition_penalty, request_timeout=args.request_timeout,
            chat_template_kwargs=args.chat_template_kwargs, log_completions=args.log_completions,
            num_completions_to_print=args.num_completions_to_print)
