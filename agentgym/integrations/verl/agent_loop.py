"""The ``agentgym`` agent loop: any agentgym env as a verl 0.9 multi-turn rollout.

For each row the loop takes an env from the process pool (the row's ``extra_info`` names it),
resets it to the row's task and alternates model turns with env steps, token in, token out, by
the turn rules shared with the TRL rollout (``agentgym.integrations.turns``); this module holds
verl's parts of them (its rollout server, Continuous Token builder, env pool and output):

* model tokens are appended as generated (loss mask 1), observations are tokenized one message
  at a time through verl's Continuous Token builder (loss mask 0): the chat is never re-tokenized;
* the loop stops when the env ends the episode, at verl's ``multi_turn.max_assistant_turns``, or
  when the response-length budget is spent (each turn may use only the tokens left);
* ``reward_score`` is the env's reward (its shaper's total with ``reward=``), so verl's reward
  loop is skipped; ``extra_fields["reward_extra_info"]`` has the fixed-key breakdown
  (``reward_info``) and ``extra_fields["agentgym"]`` says how the episode ended;
* an env that raises fails the trajectory, not the worker: its tokens stay, with loss mask 0,
  its score is ``failure_reward`` and the reason is kept (``agentgym.on_env_error: raise`` lets
  verl fail the whole group instead);
* an error that is the user's configuration (``ConfigError``, ``DataError``, a missing
  dependency) is not the model's doing: the trajectory carries it as ``agentgym.fatal`` and the
  replay buffer (``sampler.AgentGymReplayBuffer``) aborts the run at the step's first sample;
  later trajectories in the same worker fail fast with the same message;
* each turn stops at the env's first complete action (``stops.TurnCut``, as the env declares
  it): stop strings go to the rollout server and tokens after the action are cut; a stop string
  inside ``<think>`` is not an action, so generation resumes there (unless the env reads tags in
  thoughts, as Search-R1 does);
* ``agentgym.layout: search-r1`` swaps the token bookkeeping for Search-R1's
  (``search_r1_layout``); the turn rules stay the engine's.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from agentgym._toolbox import plain
from agentgym.integrations.verl._guard import require_verl

require_verl()

from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from agentgym.integrations.verl import AGENT_NAME  # noqa: E402
from agentgym.integrations.verl._compat import merge_observation  # noqa: E402
from agentgym.integrations.verl.envs import (  # noqa: E402
    ENV_POOL,
    reset_options,
    row_extra_info,
    run_off_loop,
    total_steps_of,
    training_step_of,
)
from agentgym.integrations.turns import (  # noqa: E402
    RolloutResult,
    TokenStream,
    TurnRules,
    episode_summary,
    play_episode,
    score_episode,
)
from agentgym.integrations.reward_info import term_names_for  # noqa: E402
from agentgym.integrations.search_r1_layout import SearchR1Layout, check_env  # noqa: E402
from agentgym.integrations.verl.config import AgentGymConfig, EnvTask, decode_json_field  # noqa: E402
from agentgym.integrations.stops import TurnCut, sampling_stop_params  # noqa: E402

__all__ = ["AgentGymAgentLoop"]

logger = logging.getLogger(__name__)


_MAX_RESUMES = 8  # generation resumed after a stop string inside <think>, at most this often per turn
_FATAL: list[str] = []  # the first configuration error this process met (its trajectories fail fast)


class _EnvFailure(Exception):
    """An env call raised; carries the original error as its cause."""


@dataclass
class _Rollout(TokenStream):
    """One trajectory's token stream plus what verl's server and metrics need."""

    request_id: str = field(default_factory=lambda: uuid4().hex)
    extra_fields: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=lambda: {"generate": 0.0, "env": 0.0})
    num_preempted: int = -1


@register(AGENT_NAME)
class AgentGymAgentLoop(AgentLoopBase):
    """Runs the env named by each row as a multi-turn episode (see the module docstring)."""

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any) -> None:
        # verl hands every loop its configured tools; the env owns its tools, so they are unused.
        super().__init__(*args, **kwargs)
        self.agentgym = AgentGymConfig.from_trainer_config(self.config)
        self.response_length = int(self.rollout_config.response_length)
        self.max_assistant_turns = self.rollout_config.multi_turn.get("max_assistant_turns") or None
        self.rollout_name = str(self.rollout_config.get("name", "") or "")
        self.cut = TurnCut()

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        rollout = _Rollout(messages=[dict(m) for m in (kwargs.get("raw_prompt") or [])])
        # broken until proven otherwise: a cancelled rollout may leave a step running in a thread.
        result, task, env, broken = RolloutResult(), None, None, True
        extra_info = row_extra_info(kwargs)  # a Search-R1-prepared row is mapped onto SearchQA-v0
        try:
            if _FATAL:
                raise _EnvFailure(_FATAL[0]) from _ConfigErrorSeen(_FATAL[0])
            task = EnvTask.from_extra_info(extra_info, self.agentgym)
            env = await self._env_call(rollout, ENV_POOL.acquire, task)
            self.cut = TurnCut.of(env) if self.agentgym.stop_at_action else TurnCut()
            if self.agentgym.layout == "search-r1":
                check_env(env)
            observation = await self._env_call(rollout, self._reset, env, task, kwargs.get("global_steps"))
            rollout.messages = rollout.messages or [{"role": "user", "content": observation}]
            rollout.token_ids = await self.ct_build_initial_tokens(rollout.messages)
            await self._play(env, rollout, result, sampling_params)
            broken = False
        except Exception as exc:
            broken = _is_env_error(exc)
            cause = exc.__cause__ or exc
            if broken and _is_fatal(cause):
                result.error, result.stop_reason, result.fatal = _describe(cause), "config_error", True
                if not _FATAL:
                    _FATAL.append(result.error)
                logger.error("agentgym: a configuration error, not the model's: %s", result.error)
                if not _uses_v1(self.config):  # the legacy trainer fails the step on an exception
                    raise cause from None
            elif not broken or self.agentgym.on_env_error == "raise":
                raise
            else:
                result.error, result.stop_reason = _describe(cause), "env_error"
                logger.warning("agentgym env failed (%s); trajectory masked out", result.error)
        finally:
            if env is not None:
                ENV_POOL.release(task, env, healthy=not broken)
        if not rollout.token_ids:  # the env failed before the prompt was built
            messages = rollout.messages or [{"role": "user", "content": ""}]
            rollout.token_ids = await self.ct_build_initial_tokens(messages)
        step = _as_int(kwargs.get("global_steps"))
        for key in ("min_global_steps", "max_global_steps"):  # verl's V1 trainer reads both as ints
            if rollout.extra_fields.get(key) is None and step is not None:
                rollout.extra_fields[key] = step
        return self._output(rollout, result, task, self._term_names(extra_info))

    # -- the episode (the rules are agentgym.integrations.turns'; these are verl's parts) ------
    async def _play(self, env: Any, rollout: _Rollout, result: RolloutResult, sampling_params: dict[str, Any]) -> None:
        rules = TurnRules(response_length=self.response_length, eos_token_id=self.tokenizer.eos_token_id,
                          cut=self.cut, max_turns=self.max_assistant_turns, max_resumes=_MAX_RESUMES)
        host: Any = self
        if self.agentgym.layout == "search-r1":
            host = SearchR1Layout(self, self.tokenizer, rules, observation_role=self.agentgym.observation_role,
                                  max_observation_tokens=self.agentgym.max_observation_tokens)
            rules = host.rules
        await play_episode(host, rules, env, rollout, result, sampling_params)

    async def sample(self, rollout: _Rollout, sampling_params: dict[str, Any], continued: list[int],
                     max_tokens: int) -> tuple[list[int], list[float] | None]:
        """One call to verl's rollout server, the stop strings in the engine's own terms."""
        params = {**sampling_params, **sampling_stop_params(self.rollout_name, self.cut.stops),
                  "max_tokens": max_tokens}
        started = time.perf_counter()
        output = await self.server_manager.generate(
            request_id=rollout.request_id, prompt_ids=rollout.token_ids + continued, sampling_params=params)
        rollout.seconds["generate"] += time.perf_counter() - started
        _note_server_fields(rollout, output)
        return list(output.token_ids), (list(output.log_probs) if output.log_probs else None)

    async def merge_assistant(self, rollout: _Rollout, tokens: list[int], logprobs: list[float] | None) -> None:
        merge, mask, aligned = await self.ct_merge_assistant_token(
            rollout.token_ids, tokens, rollout.response_mask,
            rollout.logprobs if (rollout.logprobs or logprobs) else None, assistant_logprobs=logprobs)
        rollout.token_ids, rollout.response_mask = merge.token_ids, mask
        if aligned is not None:
            rollout.logprobs = aligned

    async def observe(self, rollout: _Rollout, observation: str) -> bool:
        return await self._observe(rollout, observation)

    async def step(self, rollout: _Rollout, env: Any, text: str) -> Any:
        return await self._env_call(rollout, env.step, text)

    def decode(self, tokens: Any) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    async def _observe(self, rollout: _Rollout, observation: str) -> bool:
        """Append the observation as one chat message; False when it leaves no room to answer."""
        previous = list(rollout.messages)
        updated = [*previous, {"role": self.agentgym.observation_role, "content": self._clip(observation)}]
        merge, mask, aligned = await merge_observation(
            self, previous, updated, rollout.token_ids, rollout.response_mask, rollout.logprobs or None)
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
            return await run_off_loop(fn, *args, max_workers=self.agentgym.env_workers)
        except Exception as exc:
            raise _EnvFailure(str(exc)) from exc
        finally:
            rollout.seconds["env"] += time.perf_counter() - started

    def _reset(self, env: Any, task: EnvTask, global_steps: Any) -> str:
        options = reset_options(task, self.agentgym, training_step_of(_as_int(global_steps)),
                                total_steps_of(self.config, self.agentgym))
        observation, _ = env.reset(seed=task.seed, options=options or None)
        return observation

    def _clip(self, text: str) -> str:
        limit = self.agentgym.max_observation_chars
        if limit is None or len(text) <= limit:
            return text
        half = (limit - 20) // 2
        return f"{text[:half]} ...(truncated)... {text[-half:]}"

    # -- the output --------------------------------------------------------------------------
    def _term_names(self, extra_info: Any) -> tuple[str, ...]:
        """The reward terms of the row's spec, known even when the row's env could not be built."""
        reward = self.agentgym.reward
        if reward is None and isinstance(extra_info, dict):
            reward = decode_json_field(extra_info.get("reward"))
        try:
            return term_names_for(reward or None)
        except Exception:  # a broken spec already failed the env; keep the base keys
            return ()

    def _output(self, rollout: _Rollout, result: RolloutResult, task: EnvTask | None,
                terms: tuple[str, ...]) -> AgentLoopOutput:
        split = rollout.prompt_length
        prompt_ids, response_ids = rollout.token_ids[:split], rollout.token_ids[split:]
        mask, logprobs = list(rollout.response_mask), list(rollout.logprobs) or None
        if not response_ids:  # verl puts the reward on the last response token: keep one, masked
            response_ids, mask = [self._filler_token()], [0]
            logprobs = [0.0] if logprobs is not None else None
        if result.masked:
            mask = [0] * len(mask)
        score, reward_extra_info = score_episode(result, terms, failure_reward=self.agentgym.failure_reward,
                                                 unfinished_reward=self.agentgym.unfinished_reward)
        extra = {**rollout.extra_fields, "reward_extra_info": reward_extra_info,
                 "agentgym": episode_summary(result, task.env_id if task else None)}
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


class _ConfigErrorSeen(Exception):
    """Stands for the configuration error an earlier trajectory of this worker met."""


def _describe(cause: BaseException) -> str:
    if isinstance(cause, _ConfigErrorSeen):
        return str(cause)
    return f"{type(cause).__name__}: {cause}"


def _is_fatal(cause: BaseException) -> bool:
    """The user's configuration, not the model's text nor a flaky env: retrying cannot help."""
    from agentgym.errors import ConfigError, DataError, DependencyNotInstalled, RemoteEnvError

    if isinstance(cause, RemoteEnvError) and not isinstance(cause, (ConfigError, DataError)):
        return False  # a server timing out or full is an env failure (masked, counted by the guard)
    return isinstance(cause, (ConfigError, DataError, DependencyNotInstalled, ImportError, _ConfigErrorSeen))


def _is_env_error(exc: BaseException) -> bool:
    from agentgym.errors import AgentGymError

    return isinstance(exc, (_EnvFailure, AgentGymError))


def _uses_v1(config: Any) -> bool:
    trainer = config.get("trainer", None) if hasattr(config, "get") else None
    return bool(trainer.get("use_v1", True)) if trainer is not None else True


def _as_int(value: Any) -> int | None:
    value = plain(value)  # numpy scalars, depending on the trainer path
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
