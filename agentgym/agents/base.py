"""The ``Agent`` interface, and playing one episode of an env with an agent.

An agent is anything with ``reset()`` and ``act(observation, info) -> str``; either may be
``async``. ``reset()`` starts a new episode (a ``reset(seed=None)`` that takes a ``seed`` is given
the episode's sample seed, for agents that sample); ``act`` is then called with the reset's
observation and with each step's, and returns the next action text::

    class Echo:
        def reset(self) -> None: ...
        def act(self, observation: str, info: dict) -> str:
            return "GiveUp[no idea]"

    log = run_episode(gymnasium.make("TravelPlanner-v0"), Echo(), seed=0)
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentgym._env_threads import run_in_env_thread

__all__ = ["Agent", "EpisodeLog", "ReplayAgent", "play_episode", "run_episode", "function_tools", "in_env_thread"]


@runtime_checkable
class Agent(Protocol):
    """A policy over text. Implement ``reset`` and ``act``, plain or ``async``."""

    def reset(self) -> None | Awaitable[None]:
        """Forget the previous episode. It may take ``seed``: the episode's sample seed."""

    def act(self, observation: str, info: dict[str, Any]) -> str | Awaitable[str]:
        """The next action, given the latest observation and its ``info``."""


@dataclass
class EpisodeLog:
    """What happened in one episode: everything the runner records about it."""

    first_observation: str
    first_info: dict[str, Any]
    actions: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    duration_s: float = 0.0

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards))

    @property
    def last_info(self) -> dict[str, Any]:
        return self.infos[-1] if self.infos else self.first_info


class ReplayAgent:
    """Plays a script: the actions ``script(observation, info)`` returns for each episode's start.

    ``script`` may also be a fixed list of actions. Past its end the agent answers ``fallback``.
    """

    def __init__(self, script: Callable[[str, dict[str, Any]], Sequence[str]] | Sequence[str],
                 *, fallback: str = "") -> None:
        self.script, self.fallback = script, fallback
        self._actions: list[str] | None = None

    def reset(self) -> None:
        self._actions = None

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self._actions is None:
            script = self.script(observation, info) if callable(self.script) else self.script
            self._actions = list(script)
            self._actions.reverse()
        return self._actions.pop() if self._actions else self.fallback


def function_tools(env: Any) -> list[dict[str, Any]] | None:
    """The OpenAI function schemas of an env in the JSON action format, else None.

    Works for local envs (``env.unwrapped.tools``) and remote ones (the session description).
    """
    unwrapped = getattr(env, "unwrapped", env)
    description = getattr(unwrapped, "description", None)
    if description is not None and hasattr(description, "tools"):  # RemoteEnv / AsyncRemoteEnv
        return description.tools if description.action_format == "json" and description.tools else None
    if getattr(unwrapped, "action_format", None) != "json":
        return None
    tools = getattr(unwrapped, "tools", None)
    schemas = tools.schemas() if hasattr(tools, "schemas") else None
    return schemas or None


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def in_env_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a local env call off the event loop, on the process's env threads.

    A step may take a while (an evaluation, a retrieval), so it leaves the event loop free for
    the model requests. Which calls may share threads: ``agentgym._env_threads`` (the one rule)."""
    return await run_in_env_thread(fn, *args, **kwargs)


async def _env_call(env: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    fn = getattr(env, method)
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    return await in_env_thread(fn, *args, **kwargs)


async def play_episode(env: Any, agent: Agent, *, seed: int | None = None,
                       options: dict[str, Any] | None = None, max_steps: int | None = None,
                       agent_seed: int | None = None) -> EpisodeLog:
    """Play one episode; ``env`` is a gymnasium env or an ``AsyncRemoteEnv``. ``agent_seed`` goes to an
    agent whose ``reset`` takes a ``seed`` (the sample seed of ``agentgym run``)."""
    start = time.perf_counter()
    observation, info = await _env_call(env, "reset", seed=seed, options=options)
    await _resolve(agent.reset(seed=agent_seed) if agent_seed is not None and _takes_seed(agent.reset)
                   else agent.reset())
    log = EpisodeLog(first_observation=observation, first_info=info)
    while not (log.terminated or log.truncated) and (max_steps is None or len(log.actions) < max_steps):
        action = await _resolve(agent.act(observation, info))
        observation, reward, terminated, truncated, info = await _env_call(env, "step", action)
        log.actions.append(action)
        log.observations.append(observation)
        log.rewards.append(float(reward))
        log.infos.append(info)
        log.terminated, log.truncated = bool(terminated), bool(truncated)
    log.duration_s = time.perf_counter() - start
    return log


def run_episode(env: Any, agent: Agent, *, seed: int | None = None, options: dict[str, Any] | None = None,
                max_steps: int | None = None, agent_seed: int | None = None) -> EpisodeLog:
    """``play_episode`` for code without an event loop."""
    return asyncio.run(play_episode(env, agent, seed=seed, options=options, max_steps=max_steps,
                                    agent_seed=agent_seed))


def _takes_seed(reset: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(reset).parameters
    except (TypeError, ValueError):
        return False
    return "seed" in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
