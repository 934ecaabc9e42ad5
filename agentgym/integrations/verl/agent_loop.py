"""The ``agentgym`` agent loop: any agentgym env as a verl 0.9 multi-turn rollout.

For each row the loop takes an env from the process pool (the row's ``extra_info`` names it),
resets it to the row's task and alternates model turns with env steps, token in, token out:

* model tokens are appended as generated (loss mask 1), observations are tokenized one message
  at a time through verl's Continuous Token builder (loss mask 0): the chat is never re-tokenized;
* the loop stops when the env ends the episode, at verl's ``multi_turn.max_assistant_turns``, or
  when the response-length budget is spent (each turn may use only the tokens left);
* ``reward_score`` is the env's reward (its shaper's total with ``reward=``), so verl's reward
  loop is skipped; ``extra_fields["reward_extra_info"]`` has the fixed-key breakdown
  (``reward_info``) and ``extra_fields["agentgym"]`` says how the episode ended;
* an env that raises fails the trajectory, not the worker: its tokens stay, with loss mask 0,
  its score is ``failure_reward`` and the reason is kept (``agentgym.on_env_error: raise`` lets
  verl fail the whole group instead).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from agentgym.integrations.verl._guard import require_verl

require_verl()

from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from agentgym.integrations.verl import AGENT_NAME  # noqa: E402
from agentgym.integrations.verl.envs import ENV_POOL, row_extra_info, run_off_loop  # noqa: E402
from agentgym.integrations.verl.reward_info import (  # noqa: E402
    EpisodeResult,
    extra_info_from,
    score_of,
    term_names_for,
)
from agentgym.integrations.verl.settings import AgentGymConfig, EnvTask, decode_json_field  # noqa: E402

__all__ = ["AgentGymAgentLoop"]

logger = logging.getLogger(__name__)


class EnvFailure(Exception):
    """An env call raised; carries the original error as its cause."""


@dataclass
class _Rollout:
    """The token stream of one trajectory: prompt and response tokens, masks, logprobs."""

    messages: list[dict[str, Any]]
    request_id: str = field(default_factory=lambda: uuid4().hex)
    token_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    extra_fields: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=lambda: {"generate": 0.0, "env": 0.0})
    num_preempted: int = -1

    @property
    def prompt_length(self) -> int:
        return len(self.token_ids) - len(self.response_mask)


@register(AGENT_NAME)
class AgentGymAgentLoop(AgentLoopBase):
    """Runs the env named by each row as a multi-turn episode (see the module docstring)."""

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any) -> None:
        # verl hands every loop its configured tools; the env owns its tools, so they are unused.
        super().__init__(*args, **kwargs)
        self.settings = AgentGymConfig.from_trainer_config(self.config)
        self.response_length = int(self.rollout_config.response_length)
        self.max_assistant_turns = self.rollout_config.multi_turn.get("max_assistant_turns") or None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        rollout = _Rollout(messages=[dict(m) for m in (kwargs.get("raw_prompt") or [])])
        # broken until proven otherwise: a cancelled rollout may leave a step running in a thread.
        result, task, env, broken = EpisodeResult(), None, None, True
        extra_info = row_extra_info(kwargs)  # a Search-R1-prepared row is mapped onto SearchQA-v0
        try:
            task = EnvTask.from_extra_info(extra_info, self.settings)
            env = await self._env_call(rollout, ENV_POOL.acquire, task)
            observation = await self._env_call(rollout, self._reset, env, task, kwargs.get("global_steps"))
            rollout.messages = rollout.messages or [{"role": "user", "content": observation}]
            rollout.token_ids = await self.ct_build_initial_tokens(rollout.messages)
            await self._play(env, rollout, result, sampling_params)
            broken = False
        except Exception as exc:
            broken = _is_env_error(exc)
            if not broken or self.settings.on_env_error == "raise":
                raise
            cause = exc.__cause__ or exc
            result.error, result.stop_reason = f"{type(cause).__name__}: {cause}", "env_error"
            logger.warning("agentgym env failed (%s); trajectory masked out", result.error)
        finally:
            if env is not None:
                ENV_POOL.release(task, env, healthy=not broken)
        if not rollout.token_ids:  # the env failed before the prompt was built
            rollout.token_ids = await self.ct_build_initial_tokens(rollout.messages or [{"role": "user", "content": ""}])
        return self._output(rollout, result, task, self._term_names(extra_info))

    # -- the episode -------------------------------------------------------------------------
    async def _play(self, env: Any, rollout: _Rollout, result: EpisodeResult, sampling_params: dict[str, Any]) -> None:
        while True:
            budget = self.response_length - len(rollout.response_mask)
            if budget <= 0:
                result.stop_reason = "response_length"
                return
            text = await self._generate(rollout, sampling_params, budget)
            result.num_turns += 1
            if len(rollout.response_mask) >= self.response_length:
                result.stop_reason = "response_length"  # the turn was cut: not a complete action
                return
            observation, reward, terminated, truncated, info = await self._env_call(rollout, env.step, text)
            result.env_return += float(reward)
            result.final_info = info
            if terminated or truncated:
                result.done, result.terminated = True, bool(terminated)
                result.stop_reason = "terminated" if terminated else "env_truncated"
                return
            if self.max_assistant_turns and result.num_turns >= self.max_assistant_turns:
                result.stop_reason = "max_turns"
                return
            if not await self._observe(rollout, observation):
                result.stop_reason = "response_length"
                return

    async def _generate(self, rollout: _Rollout, sampling_params: dict[str, Any], budget: int) -> str:
        started = time.perf_counter()
        output = await self.server_manager.generate(
            request_id=rollout.request_id, prompt_ids=rollout.token_ids,
            sampling_params={**sampling_params, "max_tokens": budget})
        rollout.seconds["generate"] += time.perf_counter() - started
        _note_server_fields(rollout, output)
        tokens = list(output.token_ids)[:budget]
        logprobs = list(output.log_probs)[:budget] if output.log_probs else None
        merge, mask, aligned = await self.ct_merge_assistant_token(
            rollout.token_ids, tokens, rollout.response_mask,
            rollout.logprobs if (rollout.logprobs or logprobs) else None, assistant_logprobs=logprobs)
        rollout.token_ids, rollout.response_mask = merge.token_ids, mask
        if aligned is not None:
            rollout.logprobs = aligned
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        rollout.messages.append({"role": "assistant", "content": text})
        return text

    async def _observe(self, rollout: _Rollout, observation: str) -> bool:
        """Append the observation as one chat message; False when it leaves no room to answer."""
        previous = list(rollout.messages)
        updated = [*previous, {"role": self.settings.observation_role, "content": self._clip(observation)}]
        merge, mask, aligned = await self.ct_merge_context_msg(
            previous, updated, rollout.token_ids, rollout.response_mask, rollout.logprobs or None)
        if len(mask) >= self.response_length:
            return False
        rollout.messages, rollout.token_ids, rollout.response_mask = updated, merge.token_ids, mask
        if rollout.logprobs and aligned is not None:
            rollout.logprobs = aligned
        return True

    # -- env calls ---------------------------------------------------------------------------
    async def _env_call(self, rollout: _Rollout, fn: Any, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return await run_off_loop(fn, *args, max_workers=self.settings.env_workers)
        except Exception as exc:
            raise EnvFailure(str(exc)) from exc
        finally:
            rollout.seconds["env"] += time.perf_counter() - started

    def _reset(self, env: Any, task: EnvTask, global_steps: Any) -> str:
        options = dict(task.reset_options)
        step = _as_int(global_steps)
        if self.settings.pass_training_step and step is not None and task.reward is not None:
            options["training_step"] = step
            total = self.settings.total_steps or _as_int(self.config.trainer.get("total_training_steps"))
            if total is not None:
                options["total_steps"] = total
        observation, _ = env.reset(seed=task.seed, options=options or None)
        return observation

    def _clip(self, text: str) -> str:
        limit = self.settings.max_observation_chars
        if limit is None or len(text) <= limit:
            return text
        half = (limit - 20) // 2
        return f"{text[:half]} ...(truncated)... {text[-half:]}"

    # -- the output --------------------------------------------------------------------------
    def _term_names(self, extra_info: Any) -> tuple[str, ...]:
        """The reward terms of the row's spec, known even when the row's env could not be built."""
        reward = self.settings.reward
        if reward is None and isinstance(extra_info, dict):
            reward = decode_json_field(extra_info.get("reward"))
        try:
            return term_names_for(reward or None)
        except Exception:  # a broken spec already failed the env; keep the base keys
            return ()

    def _output(self, rollout: _Rollout, result: EpisodeResult, task: EnvTask | None,
                terms: tuple[str, ...]) -> AgentLoopOutput:
        split = rollout.prompt_length
        prompt_ids, response_ids = rollout.token_ids[:split], rollout.token_ids[split:]
        mask, logprobs = list(rollout.response_mask), list(rollout.logprobs) or None
        if not response_ids:  # verl puts the reward on the last response token: keep one, masked
            response_ids, mask = [self._filler_token()], [0]
            logprobs = [0.0] if logprobs is not None else None
        if result.error is not None:
            mask = [0] * len(mask)
        score = score_of(result, failure_reward=self.settings.failure_reward,
                         unfinished_reward=self.settings.unfinished_reward)
        extra = {**rollout.extra_fields, "reward_extra_info": extra_info_from(result, terms, score),
                 "agentgym": _episode_summary(result, task)}
        return AgentLoopOutput(
            prompt_ids=prompt_ids, response_ids=response_ids, response_mask=mask, response_logprobs=logprobs,
            reward_score=score, num_turns=len(rollout.messages), extra_fields=extra,
            metrics=AgentLoopMetrics(generate_sequences=rollout.seconds["generate"],
                                     tool_calls=rollout.seconds["env"], num_preempted=rollout.num_preempted))

    def _filler_token(self) -> int:
        for token in (self.tokenizer.eos_token_id, self.tokenizer.pad_token_id):
            if isinstance(token, int):
                return token
        return 0


def _note_server_fields(rollout: _Rollout, output: Any) -> None:
    # The server tags outputs with the weight versions that produced them (min/max_global_steps);
    # verl's async trainers read them to bound staleness, so keep the first turn's and the last max.
    fields = dict(getattr(output, "extra_fields", None) or {})
    if not rollout.extra_fields:
        rollout.extra_fields.update(fields)
    elif fields.get("max_global_steps") is not None:
        rollout.extra_fields["max_global_steps"] = fields["max_global_steps"]
    preempted = getattr(output, "num_preempted", None)
    if preempted is not None:
        rollout.num_preempted = max(rollout.num_preempted, 0) + int(preempted)


def _episode_summary(result: EpisodeResult, task: EnvTask | None) -> dict[str, Any]:
    info = result.final_info or {}
    return {"env_id": task.env_id if task else None, "task_id": info.get("task_id"),
            "stop_reason": result.stop_reason, "error": result.error, "env_return": result.env_return}


def _is_env_error(exc: BaseException) -> bool:
    from agentgym.errors import AgentGymError

    return isinstance(exc, (EnvFailure, AgentGymError))


def _plain(value: Any) -> Any:
    # Rows reach the loop as numpy object scalars or OmegaConf nodes depending on the trainer path.
    if hasattr(value, "item") and not isinstance(value, dict):
        value = value.item()
    return value


def _as_int(value: Any) -> int | None:
    value = _plain(value)
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
