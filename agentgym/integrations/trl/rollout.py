"""A TRL ``rollout_func`` that plays any agentgym env multi-turn, by the shared turn rules.

``GRPOTrainer(rollout_func=...)`` calls it with one batch of prompts (each prompt repeated
``num_generations`` times) and the trainer. Each prompt names an agentgym task (rows from
``task_dataset``); every episode of the batch is played at once: the model's turns are sampled
together in one ``generate`` call per round, the env steps in between (``turns.play_episode``:
stop strings, ``<think>``, the end-of-turn token, budgets, ``max_turns``). It returns:

    prompt_ids        the chat-templated prompt (the env's first observation), per episode
    completion_ids    every model turn and observation after it
    env_mask          1 for tokens the model sampled, 0 for observations and added tokens
    logprobs          None (TRL recomputes them with the policy)
    shaped_reward     the env's reward (its shaper's total); ``unfinished_reward`` when it did not finish
    reward_terms      {term: raw value} of the reward spec (0.0 when absent or abstaining)
    reward_info       the fixed-key breakdown verl logs too (``reward_info``): outcome, truncated...
    outcome           1.0 iff the env says the task was solved
    report            the env's ``info["report"]`` of the last step ({} when none)
    episode           env id, task id, stop reason, actions taken, training step

TRL hands the extra keys to every reward function by name (``rewards.py`` reads them).
With ``layout="search-r1"`` the completion is Search-R1's token layout instead of chat turns
(``search_r1_layout``: re-tokenized cut turns and raw observation tokens, no end-of-turn token).
Scheduled rewards are shaped at TRL's ``global_step`` of ``max_steps`` (``schedule_clock``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import gymnasium

from agentgym._toolbox import is_int, require_choice, require_int
from agentgym.errors import ConfigError
from agentgym.integrations.turns import (
    RolloutResult,
    TokenStream,
    TurnCut,
    TurnRules,
    episode_summary,
    play_episode,
    score_episode,
)
from agentgym.integrations.reward_info import term_names_for
from agentgym.integrations.search_r1_layout import SearchR1Layout, check_env

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


@dataclass
class _Episode(TokenStream):
    actions: list[str] = field(default_factory=list)


class AgentGymRollout:
    """``rollout_func(prompts, trainer)`` for ``GRPOTrainer``; see the module docstring and ``rollout_func``."""

    def __init__(self, env_id: str, *, env_kwargs: Mapping[str, Any] | None = None, reward: Any = None,
                 max_turns: int | None = None, response_length: int | None = None,
                 observation_role: str = "user", stop_at_action: bool = True, constraint: TurnConstraint | None = None,
                 unfinished_reward: float = 0.0, train_on_observations: bool = False, layout: str = "chat",
                 max_observation_tokens: int = 500, env_max_idle: int = 512) -> None:
        if not isinstance(env_id, str) or not env_id:
            raise ConfigError("env_id", env_id, "a registered env id, e.g. 'SearchQA-v0'")
        require_choice("layout", layout, _LAYOUTS)
        require_int("max_observation_tokens", max_observation_tokens, low=1)
        if constraint is not None and not callable(getattr(constraint, "allowed", None)):
            raise ConfigError("constraint", constraint, "an object with allowed(prefix, turn) -> token ids | None")
        self.env_id, self.env_kwargs, self.reward = env_id, dict(env_kwargs or {}), reward
        self.max_turns, self.response_length = max_turns, response_length
        self.observation_role, self.stop_at_action, self.constraint = observation_role, stop_at_action, constraint
        self.unfinished_reward = unfinished_reward
        self.layout, self.max_observation_tokens = layout, max_observation_tokens
        self.train_on_observations = train_on_observations
        self.term_names = term_names_for(reward)
        self.history: list[dict[str, Any]] = []
        """One summary per call: training step, mean reward, term means, share of each action sequence."""
        self._idle: list[gymnasium.Env] = []
        self._env_max_idle = env_max_idle

    # -- the TRL entry point ---------------------------------------------------------------
    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, list[Any]]:
        from agentgym.integrations.trl._sampler import TurnSampler

        step, total = schedule_clock(trainer, self.reward)
        sampler = TurnSampler(trainer, constraint=self.constraint)
        rules = TurnRules(response_length=self.response_length or int(trainer.args.max_completion_length),
                          eos_token_id=sampler.tokenizer.eos_token_id, max_turns=self.max_turns)
        tasks = [task_of(prompt) for prompt in prompts]
        envs = [self._acquire(total) for _ in tasks]
        try:
            if self.layout == "search-r1":
                for env in envs:
                    check_env(env)
            played = asyncio.run(self._play_all(sampler, rules, envs, tasks, step, total))
        finally:
            self._release(envs)
        output = self._output(played, step, sampler)
        self._note(output, step)
        return output

    async def _play_all(self, sampler: Any, rules: TurnRules, envs: list[Any], tasks: list[dict[str, Any]],
                        step: int | None, total: int | None) -> list[tuple[_Episode, RolloutResult]]:
        sampler.live = len(tasks)
        return list(await asyncio.gather(*(self._play(sampler, rules, env, task, step, total)
                                           for env, task in zip(envs, tasks))))

    async def _play(self, sampler: Any, rules: TurnRules, env: Any, task: Mapping[str, Any], step: int | None,
                    total: int | None) -> tuple[_Episode, RolloutResult]:
        result = RolloutResult()
        try:
            observation, _ = env.reset(seed=task.get("seed"), options=self._options(task, step, total) or None)
            episode = _Episode(messages=[{"role": "user", "content": observation}])
            episode.token_ids = sampler.prompt_ids(episode.messages)
            rules = replace(rules, cut=TurnCut.of(env) if self.stop_at_action else TurnCut())
            host: Any = _Host(sampler, self.observation_role, rules.cut.stops, rules.response_length)
            if self.layout == "search-r1":
                host = SearchR1Layout(host, sampler.tokenizer, rules, observation_role=self.observation_role,
                                      max_observation_tokens=self.max_observation_tokens)
                rules = host.rules
            await play_episode(host, rules, env, episode, result, {})
        finally:
            sampler.finished()
        return episode, result

    def _options(self, task: Mapping[str, Any], step: int | None, total: int | None) -> dict[str, Any]:
        options = dict(task.get("options") or {})
        if self.reward is not None and step is not None:
            options["training_step"] = step
            if total is not None:
                options["total_steps"] = total
        return options

    # -- envs ------------------------------------------------------------------------------
    def _acquire(self, total_steps: int | None = None) -> gymnasium.Env:
        """An idle env, or a new one built with the run length (each reset gives it too)."""
        if self._idle:
            return self._idle.pop()
        kwargs = dict(self.env_kwargs)
        if self.reward is not None:
            kwargs["reward"] = self.reward
            if total_steps is not None:
                kwargs["total_steps"] = total_steps
        return gymnasium.make(self.env_id, **kwargs)

    def _release(self, envs: list[gymnasium.Env]) -> None:
        self._idle.extend(envs[: max(0, self._env_max_idle - len(self._idle))])

    # -- the output ------------------------------------------------------------------------
    def _output(self, played: list[tuple[_Episode, RolloutResult]], step: int | None, sampler: Any) -> dict[str, list]:
        out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "env_mask", "shaped_reward",
                                                     "reward_terms", "reward_info", "outcome", "report",
                                                     "episode")}
        for episode, result in played:
            score, info = score_episode(result, self.term_names, unfinished_reward=self.unfinished_reward)
            completion, mask = episode.response_ids, list(episode.response_mask)
            if not completion:  # TRL needs a token to end on: the end-of-turn token, masked
                completion, mask = [sampler.tokenizer.eos_token_id], [0]
            if self.train_on_observations:  # a control (``controls``): what a trainer without the mask does
                mask = [1] * len(mask)
            if result.masked:
                mask = [0] * len(mask)
            report = result.report
            out["prompt_ids"].append(episode.token_ids[: episode.prompt_length])
            out["completion_ids"].append(completion)
            out["env_mask"].append(mask)
            out["shaped_reward"].append(score)
            out["reward_terms"].append({n: info[f"term/{n}"] for n in self.term_names})
            out["reward_info"].append(info)
            out["outcome"].append(info["outcome"])
            out["report"].append(dict(report) if isinstance(report, Mapping) else {})
            out["episode"].append({**episode_summary(result, self.env_id), "actions": list(episode.actions),
                                   "training_step": step})
        out["logprobs"] = None  # type: ignore[assignment]
        return out

    def _note(self, output: Mapping[str, Any], step: int | None) -> None:
        n = max(1, len(output["shaped_reward"]))
        sequences: dict[str, float] = {}
        for episode in output["episode"]:
            key = ">".join(episode["actions"])
            sequences[key] = sequences.get(key, 0.0) + 1.0 / n
        terms = {name: sum(t[name] for t in output["reward_terms"]) / n for name in self.term_names}
        self.history.append({"step": step, "reward": sum(output["shaped_reward"]) / n,
                             "outcome": sum(output["outcome"]) / n, "terms": terms, "actions": sequences})


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
        unfinished_reward: paid when the episode did not finish (turns or tokens ran out). An env
            that raises stops the training step with its error (TRL has no per-trajectory failure).
        train_on_observations: a control that must learn less (``controls``): ``env_mask`` 1 everywhere.
        layout: ``"chat"`` (each observation a chat message, a cut turn closed by the end-of-turn
            token) or ``"search-r1"``: Search-R1's token layout (``search_r1_layout``; envs playing
            ``action_format="search-r1"`` only, any other is a ``ConfigError``).
        max_observation_tokens: with ``layout="search-r1"``, each observation's tokens are cut to
            this many (Search-R1's ``max_obs_length``).
    """
    return AgentGymRollout(env_id, **kwargs)


def task_dataset(env_id: str, *, seeds: Sequence[int] | None = None, options: Sequence[Mapping[str, Any]] | None = None,
                 env_kwargs: Mapping[str, Any] | None = None) -> Any:
    """A ``datasets.Dataset`` of conversational prompts, one per task: the env's first observation
    as a user message that carries its task (``TASK_KEY``), for ``GRPOTrainer(train_dataset=...)``.

    Give ``seeds`` (each resets the env with that seed) and/or ``options`` (reset options such as
    ``{"task_index": 3}``); both given, they pair up."""
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
            observation, _ = env.reset(seed=task["seed"], options=task["options"] or None)
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
    """The TRL side of the turn rules: batched ``generate``, token lists, direct env calls."""

    def __init__(self, sampler: Any, observation_role: str, stops: tuple[str, ...], budget: int) -> None:
        self.sampler, self.observation_role, self.stops, self.budget = sampler, observation_role, stops, budget

    async def sample(self, stream: _Episode, params: dict[str, Any], continued: list[int],
                     max_tokens: int) -> tuple[list[int], None]:
        return await self.sampler.sample(stream.token_ids + continued, max_tokens, self.stops), None

    async def merge_assistant(self, stream: _Episode, tokens: list[int], logprobs: Any) -> None:
        stream.token_ids.extend(tokens)
        stream.response_mask.extend([1] * len(tokens))

    async def observe(self, stream: _Episode, observation: str) -> bool:
        ids = self.sampler.observation_ids(observation, self.observation_role)
        if len(stream.response_mask) + len(ids) >= self.budget:
            return False
        stream.messages.append({"role": self.observation_role, "content": observation})
        stream.token_ids.extend(ids)
        stream.response_mask.extend([0] * len(ids))
        return True

    async def step(self, stream: _Episode, env: Any, text: str) -> Any:
        observation, reward, terminated, truncated, info = env.step(text)
        stream.actions.append(str(info.get("action")))
        return observation, reward, terminated, truncated, info

    def decode(self, tokens: Sequence[int]) -> str:
        return self.sampler.decode(tokens)


def _spec_total(reward: Any) -> int | None:
    if reward is None:
        return None
    from agentgym.rewards import build_shaper

    return build_shaper(reward).spec.total_steps


def _positive(value: Any) -> int | None:
    return value if is_int(value) and value >= 1 else None


def _nonnegative(value: Any) -> int | None:
    return value if is_int(value) and value >= 0 else None

