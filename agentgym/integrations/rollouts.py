"""What every trainer does around the turn engine, written once: the env a rollout plays, its
reset, where env calls run, and what happens when something outside the model fails.

A **rollout** is one episode a trainer plays for training (glossary). verl's agent loop and
TRL's rollout both play theirs through :func:`play_rollout`:

* the env comes from a per-process ``EnvPool`` keyed by the task's env id, kwargs and reward
  spec; an env whose call raised is closed, never handed to another rollout;
* the reward spec is attached one way, ``ShapeReward`` over ``gymnasium.make`` (``EnvTask.make``),
  so any registered env id can be shaped;
* the reset options carry the schedule clock (``Clock``: training step and run length) when the
  task has a reward spec;
* every env call (construction, reset, step) runs on the process's env threads
  (``agentgym._env_threads``), never on the event loop the sampler shares;
* an env call that raises fails the rollout, not the trainer: the result carries a typed
  ``Failure`` (``failed reset``, ``env_error``, ``timeout``, ``worker_lost``...) and the trainer
  leaves it out of its group's baseline; an error that is the user's configuration
  (``ConfigError``, ``DataError``, a missing dependency) is marked ``fatal`` for the trainer to
  stop on;
* ``FailureBudget`` stops training when too many rollouts over a window were left out.

Every member of a GRPO group plays the same ``EnvTask`` (same task, seed and reset options); a
task must pin its episode (``EnvTask.pinned``) or the members would play different ones.
"""

from __future__ import annotations

import json
import threading
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import gymnasium

from agentgym._env_threads import run_in_env_thread
from agentgym.core.turn_cut import TurnCut
from agentgym.errors import ConfigError, TrainingAborted
from agentgym.integrations.reward_info import RolloutResult
from agentgym.integrations.turns import TokenStream, TurnHost, TurnRules, play_turns

__all__ = ["EnvTask", "EnvPool", "Clock", "RolloutLayout", "reset_options", "play_rollout", "is_fatal",
           "FailureBudget", "TASK_SELECTORS"]

TASK_SELECTORS = ("task_index", "task_id", "task")
"""Reset options that pick the task itself (with them, or a seed, every group member plays it)."""


@dataclass(frozen=True)
class EnvTask:
    """The env and the episode one rollout plays: what a trainer's row or prompt asks for."""

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    reset_options: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    reward: Any = None
    remote_url: str | None = None
    remote_token: str | None = field(default=None, repr=False)

    @property
    def pinned(self) -> bool:
        """Whether every reset of this task starts the same episode (a seed or a task selector)."""
        return self.seed is not None or any(self.reset_options.get(k) is not None for k in TASK_SELECTORS)

    def env_key(self) -> str:
        """Equal for tasks that can share an env instance (same id, kwargs and reward spec)."""
        return json.dumps([self.env_id, self.env_kwargs, self.reward, self.remote_url], sort_keys=True, default=str)

    def make(self) -> Any:
        """A new env for the task: local, wrapped in ``ShapeReward`` when there is a reward spec
        (so any env id can be shaped), or a ``RemoteEnv`` session on the env server."""
        if self.remote_url is not None:
            from agentgym.remote import RemoteEnv

            kwargs = {**self.env_kwargs, **({"reward": self.reward} if self.reward is not None else {})}
            return RemoteEnv(self.remote_url, self.env_id, env_kwargs=kwargs, token=self.remote_token)
        env = gymnasium.make(self.env_id, **self.env_kwargs)
        if self.reward is None:
            return env
        from agentgym.rewards import ShapeReward

        return ShapeReward(env, self.reward)


class EnvPool:
    """Idle env instances by ``EnvTask.env_key()``; an env is owned by one rollout at a time."""

    def __init__(self, max_idle_per_key: int = 256) -> None:
        self.max_idle_per_key = max_idle_per_key
        self._idle: dict[str, list[gymnasium.Env]] = defaultdict(list)
        self._lock = threading.Lock()
        self._make_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)

    def acquire(self, task: EnvTask) -> gymnasium.Env:
        """An idle env for the task, or a new one (blocking: call it off the event loop)."""
        key = task.env_key()
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
            make_lock = self._make_locks[key]
        # One construction at a time per key: the first builds shared caches (the TravelPlanner
        # world, a BM25 index) that concurrent first constructions would otherwise race to write.
        with make_lock:
            return task.make()

    def release(self, task: EnvTask, env: gymnasium.Env, *, healthy: bool) -> None:
        """Give the env back; an env whose call raised is closed instead, as its state is unknown."""
        if healthy:
            with self._lock:
                idle = self._idle[task.env_key()]
                if len(idle) < self.max_idle_per_key:
                    idle.append(env)
                    return
        _close_quietly(env)

    def clear(self) -> None:
        """Close every idle env."""
        with self._lock:
            envs = [env for idle in self._idle.values() for env in idle]
            self._idle.clear()
        for env in envs:
            _close_quietly(env)

    def idle_count(self, task: EnvTask) -> int:
        with self._lock:
            return len(self._idle.get(task.env_key(), ()))


def _close_quietly(env: gymnasium.Env) -> None:
    try:
        env.close()
    except Exception:  # closing a broken env must not mask the error that broke it
        pass


class Clock(NamedTuple):
    """Where training is, for a scheduled reward: the 0-based training step and the run length."""

    training_step: int | None = None
    total_steps: int | None = None


def reset_options(task: EnvTask, clock: Clock, *, pass_training_step: bool = True) -> dict[str, Any]:
    """The task's reset options plus the clock a scheduled reward needs (a task with a reward spec)."""
    options = dict(task.reset_options)
    if pass_training_step and clock.training_step is not None and task.reward is not None:
        options["training_step"] = clock.training_step
        if clock.total_steps is not None:
            options["total_steps"] = clock.total_steps
    return options


def is_fatal(exc: BaseException) -> bool:
    """The user's configuration, not the model's text nor a flaky env: retrying cannot help."""
    from agentgym.errors import ConfigError, DataError, DependencyNotInstalled, RemoteEnvError

    if isinstance(exc, RemoteEnvError) and not isinstance(exc, (ConfigError, DataError)):
        return False  # a server timing out or full is an env failure
    return isinstance(exc, (ConfigError, DataError, DependencyNotInstalled, ImportError))


class _EnvCallFailed(Exception):
    """An env call raised (the original error is the cause); ``during`` is ``reset`` or ``step``."""

    def __init__(self, during: str) -> None:
        super().__init__(during)
        self.during = during


@dataclass(frozen=True)
class RolloutLayout:
    """How a rollout's turns become tokens: the chat layout (prompt, observations) and, for
    ``search-r1``, Search-R1's layout over it."""

    chat: Any
    """A ``chat_layout.ChatLayout``: the prompt, always, and the observations under ``chat``."""
    name: str = "chat"
    max_observation_tokens: int = 500


async def play_rollout(host: TurnHost, task: EnvTask, stream: TokenStream, result: RolloutResult, *,
                       pool: EnvPool, layout: RolloutLayout, rules: TurnRules, clock: Clock,
                       params: dict[str, Any] | None = None, stop_at_action: bool = True,
                       pass_training_step: bool = True, env_threads: int | None = None) -> None:
    """Play one rollout of ``task`` into ``stream`` and ``result`` (module docstring).

    ``stream.messages``, when given, is the prompt the model reads (a dataset row's own);
    otherwise the env's first observation is. The stream always ends with a prompt, even when
    the env failed before one could be built. Errors that are not env calls' (the model server)
    propagate."""
    env, healthy = None, False

    async def env_call(during: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await run_in_env_thread(fn, *args, max_workers=env_threads)
        except Exception as exc:
            raise _EnvCallFailed(during) from exc

    stepping = _SteppingHost(host, env_call)
    try:
        env = await env_call("reset", pool.acquire, task)
        options = reset_options(task, clock, pass_training_step=pass_training_step)
        observation, _ = await env_call("reset", lambda: env.reset(seed=task.seed, options=options or None))
        stream.messages = stream.messages or [{"role": "user", "content": observation}]
        stream.token_ids = layout.chat.prompt_ids(stream.messages)
        rules = replace(rules, cut=TurnCut.of(env) if stop_at_action else TurnCut())
        try:
            turn_layout = _turn_layout(layout, env)
        except ConfigError as exc:  # the env does not fit the layout: the run's configuration
            raise _EnvCallFailed("reset") from exc
        if turn_layout is not layout.chat:
            rules = turn_layout.rules(rules)
        await play_turns(stepping, turn_layout, rules, env, stream, result, params or {})
        healthy = True
    except _EnvCallFailed as failed:
        cause = failed.__cause__ or failed
        result.fail(cause, during=failed.during)
        if is_fatal(cause):
            result.fatal, result.stop_reason = True, "config_error"
        result.cause = cause
    finally:
        if env is not None:
            pool.release(task, env, healthy=healthy)
    if not stream.token_ids:  # the env failed before the prompt was built
        stream.token_ids = layout.chat.prompt_ids(stream.messages or [{"role": "user", "content": ""}])


def _turn_layout(layout: RolloutLayout, env: Any) -> Any:
    if layout.name != "search-r1":
        return layout.chat
    from agentgym.integrations.search_r1_layout import SearchR1Layout, check_env

    check_env(env)
    return SearchR1Layout(layout.chat.tokenizer, TurnCut.of(env), max_observation_tokens=layout.max_observation_tokens,
                          observation_role=layout.chat.observation_role)


class _SteppingHost:
    """The trainer's host with its env steps run as ``play_rollout``'s env calls."""

    def __init__(self, host: TurnHost, env_call: Callable[..., Any]) -> None:
        self.host, self.env_call = host, env_call

    async def sample(self, stream: Any, params: dict[str, Any], continued: list[int], max_tokens: int,
                     stops: tuple[str, ...]) -> Any:
        return await self.host.sample(stream, params, continued, max_tokens, stops)

    async def step(self, stream: Any, env: Any, text: str) -> Any:
        return await self.env_call("step", env.step, text)

    def decode(self, tokens: Sequence[int]) -> str:
        return self.host.decode(tokens)


class FailureBudget:
    """Stops training when too many rollouts are left out of it.

    Each training step records why each of its rollouts was left out (``RolloutResult.left_out_reason``:
    a ``FailureReason`` value, ``abstained``, or None for a rollout that trains). When more than
    ``max_failed_share`` of the last ``window`` rollouts were left out, ``record`` raises
    ``TrainingAborted`` naming the reasons and their counts: a run like that trains on next to
    nothing, or on a biased few. ``max_failed_share=1.0`` never stops."""

    def __init__(self, max_failed_share: float = 0.5, window: int = 256, *, setting: str = "max_failed_share") -> None:
        self.max_failed_share, self.window, self.setting = float(max_failed_share), int(window), setting
        self._recent: deque[str | None] = deque(maxlen=self.window)

    def record(self, reasons: Sequence[str | None], step: int | None, *, first_error: str | None = None,
               extra: Mapping[str, int] | None = None) -> dict[str, float]:
        """Record one step's rollouts (``extra``: left-out ones the trainer counts itself, e.g. groups
        verl failed outright); returns the step's ``agentgym/failed/<reason>`` shares."""
        counted = list(reasons) + [reason for reason, n in (extra or {}).items() for _ in range(n)]
        self._recent.extend(counted)
        total = max(1, len(counted))
        step_counts = Counter(r for r in counted if r is not None)
        metrics = {f"agentgym/failed/{reason}": n / total for reason, n in sorted(step_counts.items())}
        left_out = sum(1 for r in self._recent if r is not None)
        share = left_out / len(self._recent) if self._recent else 0.0
        metrics["agentgym/failed_share"] = share
        if share > self.max_failed_share:
            window = Counter(r for r in self._recent if r is not None)
            detail = ", ".join(f"{reason} {n}" for reason, n in window.most_common())
            where = f"step {step}: " if step is not None else ""
            raise TrainingAborted(
                f"{where}{left_out} of the last {len(self._recent)} rollouts were left out of training ({detail}), "
                f"more than {self.setting}={self.max_failed_share:g}; first error: {first_error}")
        return metrics
