"""A TRL ``rollout_func`` that plays any agentgym env multi-turn, by the shared turn rules.

``GRPOTrainer(rollout_func=...)`` calls it with one batch of prompts (each prompt repeated
``num_generations`` times) and the trainer. Each prompt names an agentgym task (rows from
``task_dataset``), so every generation of a prompt plays the same task from the same reset. Every
episode of the batch is played at once: the model's turns are sampled together in one
``generate`` call per round, the env steps in between, on the env threads
(``rollouts.play_rollout`` and ``turns.play_turns``, the rules verl's agent loop plays by too;
the tokens are the chat template's own, ``chat_layout``). It returns:

    prompt_ids        the chat-templated prompt (the env's first observation), per episode
    completion_ids    every model turn and observation after it
    env_mask          1 for tokens the model sampled, 0 for observations and added tokens
    logprobs          the sampling log-prob of every completion token (0.0 at mask 0; None where
                      the sampler gave none, which TRL reads as "no correction"): TRL's
                      importance-sampling correction divides by them under vLLM
    shaped_reward     the env's reward (its shaper's total); ``unfinished_reward`` when it did not
                      finish; None when the rollout is left out (something outside the model failed,
                      or every term abstained): TRL keeps a None out of the group's baseline
    reward_terms      {term: raw value} of the reward spec (None when the term abstained)
    reward_info       the fixed-key breakdown verl logs too (``reward_info``): outcome, truncated...
    outcome           1.0 iff the env says the task was solved
    report            the env's ``info["report"]`` of the last step ({} when none)
    episode           env id, task id, stop reason, actions taken, why it was left out, training step
    reward_signal     the batch's reward-lab figures (``agentgym.rewards.lab.group_metrics``: zero-variance
                      share, within-group std, rank correlation with the outcome, abstention and failure
                      shares per term), the same dict on every row; ``agentgym_reward`` logs it

TRL hands the extra keys to every reward function by name (``rewards.py`` reads them).
With ``layout="search-r1"`` the completion is Search-R1's token layout instead of chat turns
(``search_r1_layout``: re-tokenized cut turns and raw observation tokens, no end-of-turn token).
Scheduled rewards are shaped at TRL's ``global_step`` of ``max_steps`` (``schedule_clock``).
With ``log_dir``, every rollout's record (``agentgym.rewards.lab.rollout_record``) is appended to
``log_dir/rollouts-<process>.jsonl``, which ``agentgym rewards compare`` reads.
The failure budget (``max_failed_share`` over ``failure_window`` rollouts) stops training with
``TrainingAborted`` when too many rollouts are left out.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import gymnasium

from agentgym._toolbox import is_int, is_number, require_choice, require_int
from agentgym.errors import ConfigError, TrainingAborted
from agentgym.integrations.chat_layout import ChatLayout
from agentgym.integrations.reward_info import term_names_for
from agentgym.integrations.rollouts import (
    TASK_SELECTORS,
    Clock,
    EnvPool,
    EnvTask,
    FailureBudget,
    RolloutLayout,
    play_rollout,
)
from agentgym.integrations.turns import RolloutResult, TokenStream, TurnRules, episode_summary, score_episode
from agentgym.rewards.lab.rollouts import RecordedEnv, RecordingPool

__all__ = ["AgentGymRollout", "rollout_func", "task_dataset", "TurnConstraint", "schedule_clock", "TASK_KEY"]

_LAYOUTS = ("chat", "search-r1")

TASK_KEY = "agentgym_task"
"""The key of a prompt message that names its task: JSON ``{"seed": int, "options": {...}}``."""


class TurnConstraint(Protocol):
    """The hook for constrained sampling: which tokens may come next in a model turn.

    ``allowed(prefix, turn)`` gets the episode's tokens before the turn (prompt, earlier turns,
    observations) and the turn's tokens so far; it returns the token ids allowed next, or None for
    no constraint. The rollout applies it as a logits processor inside ``generate``, so the
    episode still runs through the integration's own path (stops, masks, env, reward)."""

    def allowed(self, prefix: Sequence[int], turn: Sequence[int]) -> Sequence[int] | None: ...


class AgentGymRollout:
    """``rollout_func(prompts, trainer)`` for ``GRPOTrainer``; see the module docstring and ``rollout_func``."""

    def __init__(self, env_id: str, *, env_kwargs: Mapping[str, Any] | None = None, reward: Any = None,
                 max_turns: int | None = None, response_length: int | None = None,
                 observation_role: str = "user", stop_at_action: bool = True, constraint: TurnConstraint | None = None,
                 unfinished_reward: float = 0.0, train_on_observations: bool = False, layout: str = "chat",
                 max_observation_tokens: int = 500, env_max_idle: int = 512, max_failed_share: float = 0.5,
                 failure_window: int = 256, env_threads: int | None = None,
                 log_dir: str | os.PathLike[str] | None = None) -> None:
        if not isinstance(env_id, str) or not env_id:
            raise ConfigError("env_id", env_id, "a registered env id, e.g. 'SearchQA-v0'")
        require_choice("layout", layout, _LAYOUTS)
        require_choice("observation_role", observation_role, ("user", "tool"))
        require_int("max_observation_tokens", max_observation_tokens, low=1)
        require_int("failure_window", failure_window, low=1)
        if not is_number(max_failed_share) or not 0.0 <= max_failed_share <= 1.0:
            raise ConfigError("max_failed_share", max_failed_share, "a share in [0, 1] (1.0: never stop)")
        if constraint is not None and not callable(getattr(constraint, "allowed", None)):
            raise ConfigError("constraint", constraint, "an object with allowed(prefix, turn) -> token ids | None")
        self.env_id, self.env_kwargs, self.reward = env_id, dict(env_kwargs or {}), reward
        self.max_turns, self.response_length = max_turns, response_length
        self.observation_role, self.stop_at_action, self.constraint = observation_role, stop_at_action, constraint
        self.unfinished_reward = unfinished_reward
        self.layout, self.max_observation_tokens = layout, max_observation_tokens
        self.train_on_observations = train_on_observations
        self.term_names = term_names_for(reward)
        self.budget = FailureBudget(max_failed_share, failure_window, setting="max_failed_share")
        self.env_threads = env_threads
        self.history: list[dict[str, Any]] = []
        """One summary per call: training step, mean reward, term means, share of each action sequence,
        share of each reason rollouts were left out for."""
        self._pool = EnvPool(max_idle_per_key=env_max_idle)
        self._layouts: dict[int, ChatLayout] = {}
        self.log_dir = None if log_dir is None else Path(log_dir)
        self._recorded: dict[int, RecordingPool] = {}

    # -- the TRL entry point ---------------------------------------------------------------
    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, list[Any]]:
        from agentgym.integrations.trl._sampler import TurnSampler

        if getattr(trainer.args, "mask_truncated_completions", False):
            raise ConfigError("mask_truncated_completions", True, "False with agentgym's rollout_func: an episode's "
                              "last turn may end at a stop string, not an end-of-turn token, and TRL would mask it "
                              "as truncated; the rollout pays episodes that ran out of tokens unfinished_reward")
        clock = Clock(*schedule_clock(trainer, self.reward))
        layout = self._chat_layout(trainer)
        sampler = TurnSampler(trainer, layout.stop_ids, constraint=self.constraint)
        rules = TurnRules(response_length=self.response_length or int(trainer.args.max_completion_length),
                          stop_ids=layout.stop_ids, end_of_turn=layout.end_of_turn, max_turns=self.max_turns)
        tasks = [self._task(task_of(prompt)) for prompt in prompts]
        self._recorded.clear()
        played = asyncio.run(self._play_all(sampler, layout, rules, tasks, clock))
        fatal = next((result for _, result in played if result.fatal), None)
        if fatal is not None:  # the user's configuration: stop with its own error, not a masked zero
            raise fatal.cause if fatal.cause is not None else TrainingAborted(str(fatal.error))
        output = self._output(played, clock.training_step, layout)
        output["reward_signal"] = [_signal(played, output, trainer)] * len(played)
        if self.log_dir is not None:
            self._log(played, output, clock, trainer)
        reasons = [result.left_out_reason for _, result in played]
        first_error = next((r.error or (r.failure.message if r.failure else None) for _, r in played if r.masked), None)
        failed = self.budget.record(reasons, clock.training_step, first_error=first_error)
        self._note(output, clock.training_step, failed)
        return output

    def _chat_layout(self, trainer: Any) -> ChatLayout:
        processing = trainer.processing_class
        tokenizer = getattr(processing, "tokenizer", processing)
        layout = self._layouts.get(id(tokenizer))
        if layout is None:
            eos = getattr(trainer, "eos_token_ids", None) or \
                getattr(getattr(trainer.model, "generation_config", None), "eos_token_id", None)
            layout = self._layouts[id(tokenizer)] = ChatLayout(
                tokenizer, observation_role=self.observation_role,
                template_kwargs=_as_dict(getattr(trainer.args, "chat_template_kwargs", None)), generation_eos=eos)
        return layout

    def _task(self, task: Mapping[str, Any]) -> EnvTask:
        seed = task.get("seed")
        env_task = EnvTask(self.env_id, self.env_kwargs, dict(task.get("options") or {}),
                           None if seed is None else int(seed), self.reward)
        if not env_task.pinned:
            raise ConfigError("prompt", dict(task), "a task that pins its episode (a seed, or a task_index, task_id "
                              "or task reset option; task_dataset writes one) so every generation of a prompt "
                              "plays the same task")
        return env_task

    async def _play_all(self, sampler: Any, layout: ChatLayout, rules: TurnRules, tasks: list[EnvTask],
                        clock: Clock) -> list[tuple[TokenStream, RolloutResult]]:
        sampler.live = len(tasks)
        return list(await asyncio.gather(*(self._play(sampler, layout, rules, task, clock) for task in tasks)))

    async def _play(self, sampler: Any, layout: ChatLayout, rules: TurnRules, task: EnvTask,
                    clock: Clock) -> tuple[TokenStream, RolloutResult]:
        episode, result = TokenStream(messages=[]), RolloutResult()
        pool: Any = self._pool
        if self.log_dir is not None:
            pool = self._recorded[id(episode)] = RecordingPool(self._pool)
        try:
            await play_rollout(_Host(sampler), task, episode, result, pool=pool,
                               layout=RolloutLayout(layout, self.layout, self.max_observation_tokens), rules=rules,
                               clock=clock, stop_at_action=self.stop_at_action, env_threads=self.env_threads)
        finally:
            sampler.finished()
        return episode, result

    # -- the output ------------------------------------------------------------------------
    def _output(self, played: list[tuple[TokenStream, RolloutResult]], step: int | None,
                layout: ChatLayout) -> dict[str, list]:
        out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask",
                                                     "shaped_reward", "reward_terms", "reward_info", "outcome",
                                                     "report", "episode")}
        for episode, result in played:
            score, info = score_episode(result, self.term_names, unfinished_reward=self.unfinished_reward)
            completion, mask, logprobs = episode.response_ids, list(episode.response_mask), list(episode.logprobs)
            if not completion:  # TRL needs a token to end on: the end-of-turn token, masked
                completion, mask, logprobs = [_end_token(layout)], [0], [0.0]
            if self.train_on_observations:  # a control (``controls``): what a trainer without the mask does
                mask = [1] * len(mask)
            if result.masked:  # out of training, and (a None reward) out of its group's baseline
                mask = [0] * len(mask)
            report = result.report
            out["prompt_ids"].append(episode.token_ids[: episode.prompt_length])
            out["completion_ids"].append(completion)
            out["logprobs"].append(logprobs)
            out["env_mask"].append(mask)
            out["shaped_reward"].append(None if result.masked else score)
            out["reward_terms"].append({n: None if result.masked or info[f"term/{n}/abstained"] else info[f"term/{n}"]
                                        for n in self.term_names})
            out["reward_info"].append(info)
            out["outcome"].append(info["outcome"])
            out["report"].append(dict(report) if isinstance(report, Mapping) else {})
            out["episode"].append({**episode_summary(result, self.env_id), "actions": list(result.actions),
                                   "left_out": result.left_out_reason, "training_step": step})
        return out

    def _log(self, played: list[tuple[TokenStream, RolloutResult]], output: Mapping[str, Any], clock: Clock,
             trainer: Any) -> None:
        """Append each rollout's record to ``log_dir/rollouts-<process>.jsonl``. A group is one prompt's
        ``num_generations`` copies, numbered over the whole batch as TRL groups them for its advantages
        (its processes hold consecutive slices of it), so a group split across processes stays one."""
        size = max(1, int(getattr(trainer.args, "num_generations", 1) or 1))
        process = int(getattr(getattr(trainer, "accelerator", None), "process_index", 0) or 0)
        lines = []
        for i, (episode, result) in enumerate(played):
            recorded = self._recorded.pop(id(episode)).env or RecordedEnv(None)
            place = process * len(played) + i
            record = recorded.record(group=f"{clock.training_step}-{place // size}", sample=place % size,
                                     task_id=result.task_id, env_id=self.env_id, env_kwargs=self.env_kwargs,
                                     training_step=clock.training_step, total_steps=clock.total_steps,
                                     total=output["shaped_reward"][i])
            lines.append(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with (self.log_dir / f"rollouts-{process}.jsonl").open("a", encoding="utf-8") as f:
            f.write("".join(lines))

    def _note(self, output: Mapping[str, Any], step: int | None, failed: Mapping[str, float]) -> None:
        n = max(1, len(output["shaped_reward"]))
        sequences: dict[str, float] = {}
        for episode in output["episode"]:
            key = ">".join(episode["actions"])
            sequences[key] = sequences.get(key, 0.0) + 1.0 / n
        scored = [r for r in output["shaped_reward"] if r is not None]
        terms = {name: _mean([t[name] for t in output["reward_terms"] if t[name] is not None])
                 for name in self.term_names}
        signal = output["reward_signal"][0] if output.get("reward_signal") else {}
        self.history.append({"step": step, "reward": _mean(scored), "outcome": sum(output["outcome"]) / n,
                             "terms": terms, "actions": sequences, "failed": dict(failed), "signal": dict(signal)})


def rollout_func(env_id: str, **kwargs: Any) -> AgentGymRollout:
    """A ``rollout_func`` for ``GRPOTrainer`` that plays ``env_id`` multi-turn.

    Args:
        env_id: a registered env id (``"SearchQA-v0"``, ``"TravelPlanner-v0"``).
        env_kwargs: keyword arguments for ``gymnasium.make``.
        reward: a reward preset name or spec (the env's ``reward=``); None pays the env's own reward.
        max_turns: model turns per episode at most (None: until the env ends it).
        response_length: response tokens per episode (model turns and observations); default
            ``GRPOConfig.max_completion_length``.
        observation_role: the chat role observations are written as (``"user"`` or ``"tool"``).
        stop_at_action: end each turn at the env's first complete action (its stop strings).
        constraint: a ``TurnConstraint`` restricting which tokens may be sampled (constrained decoding).
        unfinished_reward: paid when the episode did not finish (turns or tokens ran out). A rollout
            that failed for a reason outside the model (the env raised, a retriever or judge did not
            answer) is paid None, which TRL leaves out of the group's baseline, and its mask is 0; a
            configuration error (``ConfigError``, ``DataError``) stops training with its own message.
        train_on_observations: a control that must learn less (``controls``): ``env_mask`` 1 everywhere.
        layout: ``"chat"`` (each observation a chat message, a cut turn closed by the end-of-turn
            token) or ``"search-r1"``: Search-R1's token layout (``search_r1_layout``; envs playing
            ``action_format="search-r1"`` only, any other is a ``ConfigError``).
        max_observation_tokens: with ``layout="search-r1"``, each observation's tokens are cut to
            this many (Search-R1's ``max_obs_length``).
        max_failed_share: the failure budget: more than this share of the last ``failure_window``
            rollouts left out of training raises ``TrainingAborted`` (1.0: never).
        failure_window: the rollouts the failure budget looks back over, across training steps.
        env_threads: threads of the process's env pool (``agentgym._env_threads``), when it is first made.
        log_dir: a folder to append every rollout's record to (``rollouts-<process>.jsonl``), for the
            reward lab (``agentgym rewards compare log_dir``); None (default) writes nothing.
    """
    return AgentGymRollout(env_id, **kwargs)


def task_dataset(env_id: str, *, seeds: Sequence[int] | None = None, options: Sequence[Mapping[str, Any]] | None = None,
                 env_kwargs: Mapping[str, Any] | None = None) -> Any:
    """A ``datasets.Dataset`` of conversational prompts, one per task: the env's first observation
    as a user message that carries its task (``TASK_KEY``), for ``GRPOTrainer(train_dataset=...)``.

    Give ``seeds`` (each resets the env with that seed) and/or ``options`` (reset options such as
    ``{"task_index": 3}``); both given, they pair up. A row whose options pick no task and that has
    no seed is pinned to the task its reset drew (``task_id``), so every generation plays it."""
    from datasets import Dataset

    if seeds is None and options is None:
        raise ConfigError("seeds", None, "a list of seeds or of reset options")
    count = len(seeds) if seeds is not None else len(options or ())
    if options is not None and seeds is not None and len(options) != count:
        raise ConfigError("options", len(options), f"as many reset options as seeds ({count})")
    env = gymnasium.make(env_id, **dict(env_kwargs or {}))
    rows = []
    try:
        for i in range(count):
            task = {"seed": None if seeds is None else int(seeds[i]),
                    "options": dict(options[i]) if options is not None else {}}
            observation, info = env.reset(seed=task["seed"], options=task["options"] or None)
            if task["seed"] is None and not any(k in task["options"] for k in TASK_SELECTORS) and info.get("task_id"):
                task["options"]["task_id"] = info["task_id"]
            rows.append({"prompt": [{"role": "user", "content": observation, TASK_KEY: json.dumps(task)}]})
    finally:
        env.close()
    return Dataset.from_list(rows)


def task_of(prompt: Any) -> dict[str, Any]:
    """The task a prompt names (``TASK_KEY`` of its first message that has one)."""
    messages = prompt if isinstance(prompt, list) else []
    for message in messages:
        raw = message.get(TASK_KEY) if isinstance(message, Mapping) else None
        if raw:
            task = json.loads(raw) if isinstance(raw, str) else dict(raw)
            if not isinstance(task, dict):
                break
            return task
    raise ConfigError("prompt", prompt, f"a conversational prompt whose message carries {TASK_KEY!r} "
                      "(build the dataset with agentgym.integrations.trl.task_dataset)")


def schedule_clock(trainer: Any, reward: Any = None) -> tuple[int | None, int | None]:
    """``(training_step, total_steps)`` for a scheduled reward: TRL's ``state.global_step`` of
    ``state.max_steps`` (``args.max_steps`` before training starts). When neither is known (an
    evaluation outside ``train()``) the spec's own ``total_steps`` is used, and a spec without one
    is shaped as at the end of its schedule, never failing for lack of a run length."""
    state, args = getattr(trainer, "state", None), getattr(trainer, "args", None)
    step = _nonnegative(getattr(state, "global_step", None))
    if step is None:
        return None, None
    total = _positive(getattr(state, "max_steps", None)) or _positive(getattr(args, "max_steps", None))
    if total is None and _spec_total(reward) is None:
        total = step + 1
    return step, (max(total, step + 1) if total is not None else None)


class _Host:
    """The TRL side of a rollout: batched sampling (env calls are ``play_rollout``'s)."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler

    async def sample(self, stream: TokenStream, params: dict[str, Any], continued: list[int], max_tokens: int,
                     stops: tuple[str, ...]) -> tuple[list[int], list[float]]:
        return await self.sampler.sample(stream.token_ids + continued, max_tokens, stops)

    async def step(self, stream: TokenStream, env: Any, text: str) -> Any:  # run by play_rollout on env threads
        return env.step(text)

    def decode(self, tokens: Sequence[int]) -> str:
        return self.sampler.decode(tokens)


def _signal(played: list[tuple[TokenStream, RolloutResult]], output: Mapping[str, Any], trainer: Any) -> dict:
    """The reward lab's figures of the batch (``agentgym.rewards.lab.group_metrics``): a group is one
    prompt's ``num_generations`` rollouts, every rollout counted (a failed one shows as failed)."""
    from agentgym.rewards.lab import group_metrics

    size = int(getattr(trainer, "num_generations", None) or trainer.args.num_generations)
    return group_metrics((i // size, info["score"], info["outcome"], result.breakdown)
                         for i, ((_, result), info) in enumerate(zip(played, output["reward_info"])))


def _end_token(layout: ChatLayout) -> int:
    token = layout.end_of_turn if layout.end_of_turn is not None else layout.tokenizer.eos_token_id
    return int(token if token is not None else 0)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return json.loads(value)
    return dict(value or {})


def _spec_total(reward: Any) -> int | None:
    if reward is None:
        return None
    from agentgym.rewards import build_shaper

    return build_shaper(reward).spec.total_steps


def _positive(value: Any) -> int | None:
    return value if is_int(value) and value >= 1 else None


def _nonnegative(value: Any) -> int | None:
    return value if is_int(value) and value >= 0 else None

