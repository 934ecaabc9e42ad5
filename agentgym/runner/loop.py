"""The evaluation loop: episodes over ``concurrency`` workers, each result stored as it finishes.

    outcome = run_eval(RunConfig(env_id="TravelPlanner-v0", agent=ChatAgentConfig(...), episodes=50,
                                 out=Path("runs/tp")))

Each worker owns one env (local, or a session on an env server) and one agent, and plays the
next pending episode until none is left. A rerun with the same config skips the episodes in
``results.jsonl`` and plays the rest. An episode whose agent or env fails is left out (noted
in ``errors.jsonl``) and retried by the next run; too many failures in a row stop the run.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import gymnasium
import httpx

from agentgym.agents.base import Agent, function_tools, in_env_thread, play_episode
from agentgym.agents.openai_chat import ChatAgentConfig, OpenAIChatAgent
from agentgym.errors import ConfigError, ModelEndpointError
from agentgym.runner.config import GoldAgentConfig, ImportedAgentConfig, PerturbedAgentConfig, RunConfig
from agentgym.runner.records import EpisodeRecord
from agentgym.runner.store import ResultStore

__all__ = ["run_eval", "run_eval_async", "RunOutcome", "Progress", "AgentFactory"]

AgentFactory = Callable[[Any], Agent]
"""``factory(env) -> Agent``: one agent per worker, reset before each episode."""


class Progress(Protocol):
    def start(self, total: int, done: int) -> None: ...
    def finished(self, record: EpisodeRecord) -> None: ...
    def failed(self, episode: int, error: str) -> None: ...


@dataclass
class RunOutcome:
    records: dict[int, EpisodeRecord]
    """Every finished episode of the run, earlier runs' included."""
    episodes: int
    failed: dict[int, str] = field(default_factory=dict)
    """Episodes that failed in this run (left for the next), with the error."""
    aborted: str | None = None
    """Why the run stopped early, if it did."""

    @property
    def complete(self) -> bool:
        return len(self.records) >= self.episodes


def run_eval(config: RunConfig, *, agent_factory: AgentFactory | None = None,
             progress: Progress | None = None) -> RunOutcome:
    return asyncio.run(run_eval_async(config, agent_factory=agent_factory, progress=progress))


async def run_eval_async(config: RunConfig, *, agent_factory: AgentFactory | None = None,
                         progress: Progress | None = None) -> RunOutcome:
    # The agent and the first env are checked before the results folder is made: a bad agent, env
    # kwarg or reward leaves no folder behind.
    if agent_factory is None and isinstance(config.agent, ImportedAgentConfig):
        agent_factory = import_factory(config.agent.target)
    first_env = await _open_env(config)
    state: _RunState | None = None
    try:
        _check_task_count(config, first_env)
        _check_gold_plans(config, first_env)
        with ResultStore(config.out, fsync=config.fsync) as store:
            done = {i: EpisodeRecord.model_validate(r) for i, r in store.open(config.identity()).items()}
            outcome = RunOutcome(records=done, episodes=config.episodes)
            pending = deque(i for i in range(config.episodes) if i not in done)
            if progress is not None:
                progress.start(config.episodes, sum(1 for i in done if i < config.episodes))
            async with httpx.AsyncClient(limits=httpx.Limits(max_connections=config.concurrency)) as client:
                factory = agent_factory or _agent_factory(config, client)
                state = _RunState(config, store, outcome, pending, factory, progress, first_env)
                try:
                    async with asyncio.TaskGroup() as group:
                        for _ in range(min(config.concurrency, len(pending))):
                            group.create_task(state.worker())
                except ExceptionGroup as failures:  # one worker's error (e.g. a bad config) stops the run
                    raise failures.exceptions[0] from None
            return outcome
    finally:
        if state is None or state.spare_env is not None:  # no worker took the first env
            await _close(first_env, None)


class _RunState:
    def __init__(self, config: RunConfig, store: ResultStore, outcome: RunOutcome, pending: deque[int],
                 factory: AgentFactory, progress: Progress | None, first_env: Any = None) -> None:
        self.config, self.store, self.outcome, self.pending = config, store, outcome, pending
        self.factory, self.progress = factory, progress
        self.failures_in_a_row = 0
        self.spare_env = first_env
        """The env made before the run started, for the first worker."""

    async def worker(self) -> None:
        env = agent = None
        try:
            while self.pending and self.outcome.aborted is None:
                episode = self.pending.popleft()
                if env is None:
                    env, self.spare_env = self.spare_env or await _open_env(self.config), None
                    agent = self.factory(env)
                if not await self._play(env, agent, episode):
                    await _close(env, agent)  # after a failure the env may be mid-step: start afresh
                    env = agent = None
        finally:
            await _close(env, agent)

    async def _play(self, env: Any, agent: Agent, episode: int) -> bool:
        task, sample = self.config.task_of(episode)
        seed = self.config.reset_seed(episode)
        options: dict[str, Any] = {"task_index": task} if self.config.selection == "index" else {}
        if self.config.reward is not None:  # a scheduled reward runs over the run's episodes
            options.update(training_step=episode, total_steps=self.config.episodes)
        try:
            log = await play_episode(env, agent, seed=seed, options=options or None,
                                     agent_seed=self.config.seed + episode)
        except Exception as exc:  # any failure of the agent or env fails this episode only
            return self._failed(episode, seed, exc, agent)
        record = EpisodeRecord.from_log(episode, seed, log, usage=getattr(agent, "usage", None), group=str(task),
                                        sample=sample, training_step=options.get("training_step"),
                                        total_steps=options.get("total_steps"))
        self._store(record)
        return True

    def _store(self, record: EpisodeRecord) -> None:
        self.store.append(record.to_json())
        self.outcome.records[record.episode] = record
        self.failures_in_a_row = 0
        if self.progress is not None:
            self.progress.finished(record)

    def _failed(self, episode: int, seed: int, exc: Exception, agent: Agent) -> bool:
        error = f"{type(exc).__name__}: {exc}"
        if self.config.record_agent_errors and isinstance(exc, ModelEndpointError) and not exc.retryable:
            from agentgym.agents.base import EpisodeLog

            log = EpisodeLog(first_observation="", first_info={})
            task, sample = self.config.task_of(episode)
            self._store(EpisodeRecord.from_log(episode, seed, log, usage=getattr(agent, "usage", None),
                                               agent_error=error, group=str(task), sample=sample))
            return False
        self.store.append_error({"episode": episode, "seed": seed, "error": error,
                                 "traceback": traceback.format_exception(exc)[-3:]})
        self.outcome.failed[episode] = error
        self.failures_in_a_row += 1
        if self.failures_in_a_row >= self.config.failure_limit and self.outcome.aborted is None:
            self.outcome.aborted = f"{self.failures_in_a_row} episodes failed in a row; the last: {error}"
        if self.progress is not None:
            self.progress.failed(episode, error)
        return False


async def _open_env(config: RunConfig) -> Any:
    if config.env_server:
        from agentgym.remote import AsyncRemoteEnv

        token = config.env_token.get_secret_value() if config.env_token else None
        return await AsyncRemoteEnv.create(config.env_server, config.env_id, env_kwargs=config.env_kwargs, token=token)

    def make() -> gymnasium.Env:
        env = gymnasium.make(config.env_id, **config.env_kwargs)
        if config.reward is not None:
            from agentgym.rewards import ShapeReward

            env = ShapeReward(env, config.reward)
        return env

    return await in_env_thread(make)


def _check_task_count(config: RunConfig, env: Any) -> None:
    """Refuse up front episodes that are not whole groups and, with ``selection="index"``, more tasks
    than the env has."""
    per_task = config.samples_per_task
    if config.episodes % per_task:
        raise ConfigError("episodes", config.episodes, f"a multiple of samples_per_task ({per_task}): each task "
                          f"plays {per_task} episodes, e.g. {per_task * max(1, config.episodes // per_task)}")
    unwrapped = getattr(env, "unwrapped", None)
    tasks = getattr(unwrapped, "tasks", None)
    if config.selection == "index" and tasks is not None and config.episodes // per_task > len(tasks):
        raise ConfigError("episodes", config.episodes, f"at most {len(tasks) * per_task}: {len(tasks)} tasks of "
                          f"{config.env_id} x {per_task} samples (or --selection seed to draw tasks at random)")


def _check_gold_plans(config: RunConfig, env: Any) -> None:
    """The gold agent replays each task's annotated plan: refuse up front tasks that have none
    (the real validation and test splits), instead of failing every episode."""
    tasks = getattr(getattr(env, "unwrapped", None), "tasks", None)
    if not isinstance(config.agent, GoldAgentConfig) or tasks is None:
        return
    count = config.episodes // config.samples_per_task
    played = tasks[:count] if config.selection == "index" else tasks  # seed: any may be drawn
    lacking = [t for t in played if not getattr(t, "annotated_plan", None)]
    if lacking:
        raise ConfigError("agent", "gold", f"tasks with a gold plan to replay, but {len(lacking)} of the "
                          f"{len(played)} tasks this run plays have none (the first: {lacking[0].id!r}); play "
                          "tasks that have one (e.g. --tasks train), or --agent solver, which plans them itself")


def _agent_factory(config: RunConfig, client: httpx.AsyncClient) -> AgentFactory:
    agent = config.agent
    if isinstance(agent, ChatAgentConfig):
        return lambda env: OpenAIChatAgent(agent, tools=function_tools(env), client=client)
    if isinstance(agent, GoldAgentConfig):
        from agentgym.agents.scripted import travelplanner_gold_agent

        return travelplanner_gold_agent
    if isinstance(agent, ImportedAgentConfig):
        return import_factory(agent.target)
    if isinstance(agent, PerturbedAgentConfig):
        from agentgym.agents.scripted import PerturbedAgent

        return lambda env: PerturbedAgent(env, pass_rate=agent.pass_rate, invalid_rate=agent.invalid_rate,
                                          max_edits=agent.max_edits)
    raise TypeError(f"unknown agent config {agent!r}")


def import_factory(target: str) -> AgentFactory:
    """``module:factory`` imported, with the current folder on the import path (as ``uvicorn app:app``
    does); a module or name that is not there is a ``ConfigError``."""
    module, _, name = target.partition(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module == exc.name or module.startswith(exc.name + ".")):
            raise  # the module exists but imports something missing: its own traceback says what
        raise ConfigError("agent", target, f"module:factory with {exc.name!r} importable from {os.getcwd()} "
                          "or the installed packages") from None
    for part in name.split("."):
        if not hasattr(found, part):
            public = sorted(n for n in vars(found) if not n.startswith("_") and callable(getattr(found, n)))[:20]
            raise ConfigError("agent", target, f"a callable of {module} ({', '.join(public) or 'it has none'})")
        found = getattr(found, part)
    if not callable(found):
        raise ConfigError("agent", target, f"a callable factory(env) -> Agent, not a {type(found).__name__}")
    return found


async def _close(env: Any, agent: Any) -> None:
    close_agent = getattr(agent, "aclose", None) or getattr(agent, "close", None)
    for close in (close_agent, getattr(env, "close", None)):
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result
