"""Shaping recorded rollouts again: each rollout's episode, told what its env knows of the task.

``TaskContexts`` builds each env a rollout names once (``gymnasium.make(env_id, **env_kwargs)``,
without a reward), and asks it for each task's reward context once
(:meth:`~agentgym.core.env.TextEnv.task_context`): TravelPlanner's task and its re-evaluation under
another evaluator, SearchQA's question and gold answers. ``shape_steps`` shapes a spec at several
training steps and shapes once where the schedule gives the same weights.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, overload

from pydantic import ValidationError

from agentgym._toolbox import collector_paused
from agentgym.core.types import StepInfo
from agentgym.errors import AgentGymError, ConfigError, DataError
from agentgym.rewards.episode import Episode, step_info
from agentgym.rewards.lab.rollouts import Rollout
from agentgym.rewards.shaper import RewardBreakdown, Shaper

__all__ = ["TaskContexts", "episodes_of", "shape_steps", "shape_rollouts", "spec_label", "collector_paused"]


class TaskContexts:
    """``contexts(rollout) -> dict`` for ``Episode(...)``: what the rollout's env knows of its task.

    Args:
        env_id: the env of rollouts that do not name one (e.g. a verl dump of rows without it).
        env_kwargs: kwargs that replace the recorded ones (e.g. ``{"database": "/data/travelplanner"}``
            where the rollouts were played on another machine).
    """

    def __init__(self, env_id: str | None = None, env_kwargs: Mapping[str, Any] | None = None) -> None:
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs or {})
        self._envs: dict[str, Any] = {}
        self._contexts: dict[tuple[str, str], dict[str, Any]] = {}

    def __call__(self, rollout: Rollout) -> dict[str, Any]:
        env_id = rollout.env_id or self.env_id
        if env_id is None:
            raise DataError(f"rollout {rollout.key} names no env: pass the env id it was played on")
        if rollout.task_id is None:
            return {}
        kwargs = {k: v for k, v in {**rollout.env_kwargs, **self.env_kwargs}.items() if k != "reward"}
        key = json.dumps([env_id, kwargs], sort_keys=True, default=str)
        found = self._contexts.get((key, rollout.task_id))
        if found is None:
            env = self._env(key, env_id, kwargs)
            try:
                found = env.unwrapped.task_context(rollout.task_id)
            except ConfigError as exc:
                raise DataError(f"rollout {rollout.key}: {env_id} built with {kwargs or 'no kwargs'} has no task "
                                f"{rollout.task_id!r} ({exc}); pass the env kwargs it was played with") from None
            if callable(found.get("evaluate")):  # a group's samples often submit the same answer
                found = {**found, "evaluate": _remembered(found["evaluate"])}
            self._contexts[(key, rollout.task_id)] = found
        return found

    def _env(self, key: str, env_id: str, kwargs: dict[str, Any]) -> Any:
        env = self._envs.get(key)
        if env is None:
            import gymnasium

            import agentgym  # noqa: F401  (registers the env ids)

            try:
                env = self._envs[key] = gymnasium.make(env_id, **kwargs)
            except AgentGymError:
                raise
            except Exception as exc:  # gymnasium's own errors (an unregistered id, ...)
                raise ConfigError("env_id", env_id, f"an env id gymnasium can make ({type(exc).__name__}: {exc})") \
                    from None
        return env

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()


def episodes_of(rollouts: Sequence[Rollout], contexts: TaskContexts) -> list[Episode]:
    """Each rollout's episode as the reward terms score it (reusable across specs: inputs are read once).

    Its steps are read from the infos when a term first asks for them: specs that score only the
    final report (TravelPlanner's presets) never read the tool steps."""
    return [Episode(_Steps(rollout), actions=rollout.actions, prompt=rollout.prompt, **contexts(rollout))
            for rollout in rollouts]


_STEP_KEYS = frozenset(StepInfo.model_fields)


class _Steps(Sequence[StepInfo]):
    """A rollout's infos as ``StepInfo``, each read on first use (iterating reads them all, once); a
    malformed one is a ``DataError`` naming the rollout, the step and the field."""

    def __init__(self, rollout: Rollout) -> None:
        self._rollout, self._steps = rollout, [None] * len(rollout.infos)
        self._all = False

    def __len__(self) -> int:
        return len(self._steps)

    @overload
    def __getitem__(self, index: int) -> StepInfo: ...
    @overload
    def __getitem__(self, index: slice) -> list[StepInfo]: ...

    def __getitem__(self, index: int | slice) -> StepInfo | list[StepInfo]:
        if isinstance(index, slice):
            return list(self)[index]
        found = self._steps[index]
        return found if found is not None else self._read(index % len(self._steps))

    def __iter__(self) -> Iterator[StepInfo]:
        if not self._all:  # terms that read the steps iterate them: read the missing ones once
            for i, found in enumerate(self._steps):
                if found is None:
                    self._read(i)
            self._all = True
        return iter(self._steps)

    def _read(self, index: int) -> StepInfo:
        info = self._rollout.infos[index]
        try:  # an info of StepInfo's keys alone is read as it is; step_info drops the others (``reward``)
            found = StepInfo.model_validate(info) if info.keys() <= _STEP_KEYS else step_info(info)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "the dict"
            raise DataError(f"rollout {self._rollout.key}: infos[{index}] is not a step's info dict "
                            f"({where}: {first['msg']})") from None
        self._steps[index] = found
        return found


def _remembered(evaluate: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """``evaluate`` remembering its reports by (answer, evaluator) for one task (answers are text or None)."""
    cached = lru_cache(maxsize=4096)(evaluate)

    def call(answer: Any, evaluator: str) -> Any:
        if answer is not None and not isinstance(answer, str):
            return evaluate(answer, evaluator)
        return cached(answer, evaluator)

    return call


def shape_steps(shaper: Shaper, episodes: Sequence[Episode], steps: Sequence[int | None],
                total_steps: int | None = None) -> dict[int | None, list[RewardBreakdown]]:
    """The breakdowns of ``episodes`` at each of ``steps``; steps whose stage and weights are the same
    share one shaping (their breakdowns' ``training_step`` is the first such step's)."""
    shaped: dict[Any, list[RewardBreakdown]] = {}
    out: dict[int | None, list[RewardBreakdown]] = {}
    for step in steps:
        key = (shaper.stage_at(step, total_steps), tuple(shaper.weights_at(step, total_steps).items()))
        if key not in shaped:
            shaped[key] = shaper.shape_batch(list(episodes), step, total_steps)
        out[step] = shaped[key]
    return out


def shape_rollouts(rollouts: Sequence[Rollout], spec: Any, *, env_id: str | None = None,
                   env_kwargs: Mapping[str, Any] | None = None) -> list[RewardBreakdown]:
    """Each rollout shaped again under ``spec`` at the training step it was played at (its
    ``training_step`` of ``total_steps``): a rollout played under ``spec`` gets back its live total.
    ``env_id`` and ``env_kwargs`` are as in :class:`TaskContexts`."""
    from agentgym.rewards.shaper import build_shaper

    shaper = build_shaper(spec)
    contexts = TaskContexts(env_id, env_kwargs)
    by_clock: dict[tuple[int | None, int | None], list[int]] = {}
    for i, rollout in enumerate(rollouts):
        by_clock.setdefault((rollout.training_step, rollout.total_steps), []).append(i)
    out: list[Any] = [None] * len(rollouts)
    try:
        with collector_paused():
            episodes = episodes_of(rollouts, contexts)
            for (step, total), indices in by_clock.items():
                for i, breakdown in zip(indices, shaper.shape_batch([episodes[i] for i in indices], step, total)):
                    out[i] = breakdown
    finally:
        contexts.close()
    return out


def spec_label(spec: Any, shaper: Shaper, index: int) -> str:
    """A spec's name in the output: a preset name or file as given, else the spec's ``name``."""
    if isinstance(spec, str) and "\n" not in spec and len(spec) <= 120 and not spec.lstrip().startswith("{"):
        return spec.strip()
    if isinstance(spec, Path):
        return str(spec)
    if isinstance(spec, Mapping) and isinstance(spec.get("preset"), str):
        extra = sorted(k for k in spec if k != "preset")
        return spec["preset"] + (f" ({', '.join(extra)} overridden)" if extra else "")
    return shaper.spec.name or f"spec {index + 1}"
