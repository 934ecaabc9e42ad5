"""The ``agentgym`` agent loop: any agentgym env as a verl 0.9 multi-turn rollout.

For each row the loop plays the env its ``extra_info`` names, reset to the row's task, token in,
token out, by the rules every trainer shares: ``agentgym.integrations.rollouts`` (the env pool,
the reset with verl's schedule clock, env calls on the env threads, typed failures) and
``agentgym.integrations.turns`` (the turn rules); the tokens are the chat template's own
(``chat_layout.ChatLayout``, the same as under TRL). This module holds verl's parts:

* sampling is verl's rollout server, the env's stop strings in the engine's own terms; the
  episode stops when the env ends it, at ``multi_turn.max_assistant_turns`` model turns, after
  ``multi_turn.max_user_turns`` observations, or when the response-length budget is spent;
* ``reward_score`` is the env's reward (its shaper's total with ``reward=``), so verl's reward
  loop is skipped; verl pays it on the last response token, which is always one the model
  produced (the rules never end a stream on an added token); ``extra_fields["reward_extra_info"]``
  has the fixed-key breakdown (``reward_info``; with ``trainer.rollout_data_dir`` or
  ``validation_data_dir`` set, also ``agentgym_record``: the rollout record the reward lab reads
  back from verl's dump) and ``extra_fields["agentgym"]`` says how the
  episode ended;
* a rollout that failed for a reason outside the model (the env raised, a retriever or judge did
  not answer, a timeout) keeps its tokens with loss mask 0 and reports ``failed=1`` and its
  ``failure``; agentgym's replay buffers leave it out of the batch, so no group baseline sees it
  (``agentgym.on_env_error: raise`` lets verl fail the whole group instead);
* an error that is the user's configuration (``ConfigError``, ``DataError``, a missing
  dependency) is not the model's doing: the trajectory carries it as ``agentgym.fatal`` and the
  replay buffer (``sampler.AgentGymReplayBuffer``) aborts the run at the step's first sample;
  later trajectories in the same worker fail fast with the same message;
* ``num_turns`` counts as verl's ``ToolAgentLoop`` does (the prompt, model turns, observations),
  and ``rollout.full_determinism`` gives verl's ``det-<priority>`` request ids.
"""

from __future__ import annotations

import json
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
from agentgym.integrations.chat_layout import ChatLayout, generation_eos_of  # noqa: E402
from agentgym.integrations.rollouts import RolloutLayout, play_rollout  # noqa: E402
from agentgym.integrations.verl.envs import ENV_POOL, clock_of, row_extra_info  # noqa: E402
from agentgym.integrations.turns import (  # noqa: E402
    RolloutResult,
    TokenStream,
    TurnRules,
    episode_summary,
    score_episode,
)
from agentgym.integrations.reward_info import term_names_for  # noqa: E402
from agentgym.integrations.verl.config import AgentGymConfig, EnvTask, decode_json_field  # noqa: E402
from agentgym.integrations.stops import sampling_stop_params  # noqa: E402
from agentgym.rewards.lab.readers import VERL_COLUMN as RECORD_COLUMN  # noqa: E402
from agentgym.rewards.lab.rollouts import RecordedEnv, RecordingPool  # noqa: E402

__all__ = ["AgentGymAgentLoop"]

logger = logging.getLogger(__name__)


_FATAL: list[str] = []  # the first configuration error this process met (its trajectories fail fast)
_LAYOUTS: dict[tuple[int, str, str], ChatLayout] = {}  # per tokenizer, role and template kwargs: built once


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
        multi_turn = self.rollout_config.multi_turn
        self.max_assistant_turns = multi_turn.get("max_assistant_turns") or None
        self.max_user_turns = multi_turn.get("max_user_turns") or None
        self.rollout_name = str(self.rollout_config.get("name", "") or "")
        self.full_determinism = bool(self.rollout_config.get("full_determinism", False))
        self.layout = self._chat_layout()
        trainer = self.config.get("trainer", None) if hasattr(self.config, "get") else None
        # The reward lab reads verl's dumps: every trajectory carries its record when one is written.
        self.records = trainer is not None and bool(trainer.get("rollout_data_dir", None)
                                                    or trainer.get("validation_data_dir", None))

    def _chat_layout(self) -> ChatLayout:
        template_kwargs = _as_dict(self.apply_chat_template_kwargs)
        key = (id(self.tokenizer), self.agentgym.observation_role, repr(sorted(template_kwargs.items())))
        layout = _LAYOUTS.get(key)
        if layout is None:
            model = self.config.actor_rollout_ref.get("model", None)
            eos = generation_eos_of(model.get("path", None) if model is not None else None)
            layout = _LAYOUTS[key] = ChatLayout(self.tokenizer, observation_role=self.agentgym.observation_role,
                                                template_kwargs=template_kwargs, generation_eos=eos)
        return layout

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        request_id = f"det-{kwargs.get('priority', 0)}" if self.full_determinism else uuid4().hex
        rollout = _Rollout(messages=[dict(m) for m in (kwargs.get("raw_prompt") or [])], request_id=request_id)
        result, task = RolloutResult(), None
        pool = RecordingPool(ENV_POOL) if self.records else ENV_POOL
        extra_info = row_extra_info(kwargs)  # a Search-R1-prepared row is mapped onto SearchQA-v0
        try:
            if _FATAL:
                raise _ConfigErrorSeen(_FATAL[0])
            task = EnvTask.from_extra_info(extra_info, self.agentgym)
        except Exception as exc:  # the row cannot be read: the run's configuration
            result.fail(exc, during="reset")
            result.fatal, result.stop_reason, result.cause = True, "config_error", exc
        else:
            rules = TurnRules(response_length=self.response_length, stop_ids=self.layout.stop_ids,
                              end_of_turn=self.layout.end_of_turn, max_turns=self.max_assistant_turns,
                              max_observations=self.max_user_turns)
            started = time.perf_counter()
            await play_rollout(self, task, rollout, result, pool=pool, layout=self._rollout_layout(), rules=rules,
                               clock=clock_of(_as_int(kwargs.get("global_steps")), self.config, self.agentgym),
                               params=sampling_params, stop_at_action=self.agentgym.stop_at_action,
                               pass_training_step=self.agentgym.pass_training_step,
                               env_threads=self.agentgym.env_workers)
            rollout.seconds["env"] = max(0.0, time.perf_counter() - started - rollout.seconds["generate"])
        self._report(result)
        if not rollout.token_ids:  # the row could not be read: a prompt to carry the failure
            rollout.token_ids = self.layout.prompt_ids(rollout.messages or [{"role": "user", "content": ""}])
        step = _as_int(kwargs.get("global_steps"))
        for key in ("min_global_steps", "max_global_steps"):  # verl's V1 trainer reads both as ints
            if rollout.extra_fields.get(key) is None and step is not None:
                rollout.extra_fields[key] = step
        output = self._output(rollout, result, task, self._term_names(extra_info))
        if self.records:
            played = pool.env or RecordedEnv(None)  # none when the row could not be read
            output.extra_fields["reward_extra_info"][RECORD_COLUMN] = _record(played, result, task, kwargs, step,
                                                                               output.reward_score)
        return output

    def _rollout_layout(self) -> RolloutLayout:
        return RolloutLayout(self.layout, self.agentgym.layout, self.agentgym.max_observation_tokens)

    def _report(self, result: RolloutResult) -> None:
        """Log a failure; stop the process's later trajectories (and the legacy trainer) on a
        configuration error; re-raise with ``on_env_error: raise``."""
        if result.fatal:
            if not _FATAL:
                _FATAL.append(_describe(result.cause) if result.cause is not None else str(result.error))
            result.error = _FATAL[0]
            logger.error("agentgym: a configuration error, not the model's: %s", result.error)
            if not _uses_v1(self.config) and result.cause is not None:  # the legacy trainer fails the step
                raise result.cause
        elif result.cause is not None and self.agentgym.on_env_error == "raise":
            raise result.cause
        elif result.failure is not None:
            logger.warning("agentgym: %s (%s); trajectory left out of training", result.failure.reason.value,
                           result.failure.message)

    # -- the host: verl's rollout server (the rules are agentgym.integrations.turns') -------------
    async def sample(self, rollout: _Rollout, sampling_params: dict[str, Any], continued: list[int],
                     max_tokens: int, stops: tuple[str, ...]) -> tuple[list[int], list[float] | None]:
        """One call to verl's rollout server, the stop strings in the engine's own terms."""
        params = {**sampling_params, **sampling_stop_params(self.rollout_name, stops), "max_tokens": max_tokens}
        started = time.perf_counter()
        output = await self.server_manager.generate(
            request_id=rollout.request_id, prompt_ids=rollout.token_ids + continued, sampling_params=params)
        rollout.seconds["generate"] += time.perf_counter() - started
        _note_server_fields(rollout, output)
        return list(output.token_ids), (list(output.log_probs) if output.log_probs else None)

    def decode(self, tokens: Any) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    async def step(self, rollout: _Rollout, env: Any, text: str) -> Any:  # run by play_rollout on env threads
        return env.step(text)

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
        mask, logprobs = list(rollout.response_mask), rollout.sampled_logprobs() if rollout.logprobs else None
        if not response_ids:  # verl puts the reward on the last response token: keep one, masked
            response_ids, mask = [self._filler_token()], [0]
            logprobs = [0.0] if logprobs is not None else None
        if result.masked:
            mask = [0] * len(mask)
        score, reward_extra_info = score_episode(result, terms, failure_reward=self.agentgym.failure_reward,
                                                 unfinished_reward=self.agentgym.unfinished_reward)
        extra = {**rollout.extra_fields, "reward_extra_info": reward_extra_info,
                 "agentgym": {**episode_summary(result, task.env_id if task else None),
                              "breakdown": result.breakdown.to_dict() if result.breakdown is not None else None}}
        return AgentLoopOutput(
            prompt_ids=prompt_ids, response_ids=response_ids, response_mask=mask, response_logprobs=logprobs,
            # as verl's ToolAgentLoop counts: the prompt, then every model turn and observation
            reward_score=score, num_turns=result.num_turns + result.observations + 1, extra_fields=extra,
            metrics=AgentLoopMetrics(generate_sequences=rollout.seconds["generate"],
                                     tool_calls=rollout.seconds["env"], num_preempted=rollout.num_preempted))

    def _filler_token(self) -> int:
        for token in (self.tokenizer.eos_token_id, self.tokenizer.pad_token_id):
            if isinstance(token, int):
                return token
        return 0


def _record(played: RecordedEnv, result: RolloutResult, task: EnvTask | None, kwargs: dict[str, Any],
            step: int | None, score: Any) -> str:
    """The trajectory's rollout record (``agentgym.rewards.lab``) as JSON text, a column of verl's dump:
    its group is verl's ``uid``, its sample the V1 worker's ``session_id``."""
    uid, session = plain(kwargs.get("uid")), _as_int(kwargs.get("session_id"))
    record = played.record(group=str(uid) if uid is not None else uuid4().hex, sample=max(session or 0, 0),
                           task_id=result.task_id, env_id=task.env_id if task else None,
                           env_kwargs=task.env_kwargs if task else None, seed=task.seed if task else None,
                           training_step=step, total=score)
    return json.dumps(record, ensure_ascii=False, default=str)


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


def _as_dict(node: Any) -> dict[str, Any]:
    if node is None:
        return {}
    if isinstance(node, dict):
        return dict(node)
    from omegaconf import OmegaConf

    return dict(OmegaConf.to_container(node, resolve=True))


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
