"""Wiring a shaper into an env: the ``ShapeReward`` wrapper, the one place rewards are shaped live.

Shaping is per episode: every step but the last pays 0, and the last step (terminated or
truncated) pays the shaped total and carries the breakdown in ``info["reward"]``::

    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense")   # wraps in ShapeReward
    # or ShapeReward(gymnasium.make("TravelPlanner-v0"), "planner_r1/dense")
    obs, info = env.reset(options={"training_step": 120})
    ...
    obs, reward, terminated, truncated, info = env.step(action)
    info["reward"]  # {"total", "outcome", "stage", "training_step", "terms": {name: {raw, weight, ...}},
                    #  "abstained": no term gave a value, "abstain_reasons": {name: reason}}

The trainer sets the training step, either per episode with ``reset(options={"training_step":
n, "total_steps": T})`` or once per step with ``set_training_step(n, total_steps=T)`` on the
wrapper (``env.get_wrapper_attr("set_training_step")`` reaches it through Gymnasium's wrappers).
A schedule in fractions of the run needs the run's length: from the spec, ``total_steps=T`` here
(``gymnasium.make(ID, reward=..., total_steps=T)``, which refuses such a spec without one), or
with each step as above.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium

from agentgym.core.types import StepInfo
from agentgym.errors import ConfigError
from agentgym._deprecated import RenamedKeys
from agentgym.rewards._base import check_training_step
from agentgym.rewards._registry import RENAMED_INPUTS
from agentgym.rewards.episode import Episode, step_info
from agentgym.rewards.shaper import Shaper, build_shaper

__all__ = ["ShapeReward", "pop_training_step", "check_training_step"]

CONTEXT_KEYS = ("task", "task_text", "gold_answers", "answer", "outcome", "evaluate")
"""What an env's ``reward_context()`` may return (see ``TextEnv.reward_context``)."""
_OLD_CONTEXT = RenamedKeys("reward_context key", RENAMED_INPUTS)


class _Recorder:
    """ShapeReward's memory of the episode (prompt, actions, steps, env return), shaped at its end."""

    def __init__(self, shaper: Shaper) -> None:
        self.shaper = shaper
        self.start("")

    def start(self, prompt: str) -> None:
        """Begin a new episode whose first observation is ``prompt``."""
        self.prompt = prompt
        self.actions: list[str] = []
        self.steps: list[StepInfo] = []
        self.env_return = 0.0

    def step(self, action: str, reward: float, done: bool, step: StepInfo, info: dict[str, Any],
             context: Callable[[], Mapping[str, Any]], schedule: tuple[int | None, int | None]) -> float:
        """Record one step; return the reward to pay (on the last step, with ``info["reward"]`` set)."""
        self.actions.append(action)
        self.steps.append(step)
        self.env_return += float(reward)
        if not done:
            return 0.0
        breakdown = self.shaper.shape(self.episode(context()), *schedule)
        info["reward"] = breakdown.to_dict()
        return breakdown.total

    def episode(self, context: Mapping[str, Any]) -> Episode:
        """The recorded episode, completed by the env's ``reward_context()``."""
        if not context.keys().isdisjoint(RENAMED_INPUTS):
            context = _OLD_CONTEXT.apply(context, stacklevel=6)
        unknown = set(context) - set(CONTEXT_KEYS)
        if unknown:
            raise ConfigError("reward_context", sorted(unknown), CONTEXT_KEYS)
        fields = {"outcome": self.env_return, **context}
        return Episode(list(self.steps), actions=list(self.actions), prompt=self.prompt, **fields)


def pop_training_step(options: dict[str, Any]) -> tuple[int, int | None] | None:
    """Take ``training_step`` (and ``total_steps``) out of reset options, validated; None if absent."""
    if "training_step" not in options:
        if "total_steps" in options:
            raise ConfigError("options", sorted(options), "'total_steps' only together with 'training_step'")
        return None
    return check_training_step(options.pop("training_step"), options.pop("total_steps", None))


class ShapeReward(gymnasium.Wrapper):
    """Replace an env's reward with a shaped one, paid on the episode's last step.

    Args:
        env: an agentgym env (its ``info`` dicts are ``StepInfo`` dicts).
        reward: a preset name, a spec (dict, YAML/JSON text or path, ``RewardSpec``) or a ``Shaper``.
        total_steps: the run's length, for a schedule in fractions of the run, when the training
            step comes without one (the trainer's ``total_steps`` wins, then the spec's).

    The unshaped outcome is the env's own return over the episode (1.0 iff solved for
    agentgym envs); ``env.unwrapped.reward_context()``, when the env has it, supplies the task,
    the answer and the gold answers the terms read.
    """

    def __init__(self, env: gymnasium.Env, reward: Any, *, total_steps: int | None = None) -> None:
        super().__init__(env)
        if _already_shaped(env):
            raise ConfigError("reward", "ShapeReward over an env made with reward=...",
                              "one shaper: either the env's reward= kwarg or the ShapeReward wrapper")
        self.shaper = build_shaper(reward, env=env.unwrapped)
        self._recorder = _Recorder(self.shaper)
        self.run_length = check_training_step(0, total_steps)[1]
        """The run length given at construction: the default of every ``set_training_step``."""
        self.training_step: int | None = None
        self.total_steps: int | None = self.run_length

    def set_training_step(self, step: int, total_steps: int | None = None) -> None:
        """Shape the next episodes at training step ``step`` (of ``total_steps``, when known)."""
        self.training_step, total_steps = check_training_step(step, total_steps)
        self.total_steps = self.run_length if total_steps is None else total_steps

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        options = dict(options or {})
        schedule = pop_training_step(options)
        if schedule is not None:
            self.set_training_step(*schedule)
        if self.shaper.needs_total_steps and self.total_steps is None:
            raise ConfigError("total_steps", None, "an int >= 1: this reward's schedule is in fractions of the run; "
                              "pass reset(options={'training_step': n, 'total_steps': T}), call "
                              "set_training_step(n, total_steps=T), or set total_steps in the spec "
                              "({'preset': ..., 'total_steps': T})")
        observation, info = self.env.reset(seed=seed, options=options or None)
        self._recorder.start(observation if isinstance(observation, str) else str(observation))
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        step = self._step_info(info)
        info = dict(info)
        shaped = self._recorder.step(str(action), float(reward), terminated or truncated, step, info, self._context,
                                     (self.training_step, self.total_steps))
        return observation, shaped, terminated, truncated, info

    def _step_info(self, info: dict[str, Any]) -> StepInfo:
        # The env's own record when the dict came straight from it: no parse of what it just dumped.
        typed = getattr(self.env.unwrapped, "step_info_of", None)
        step = typed(info) if callable(typed) else None
        return step if step is not None else step_info(info)

    def _context(self) -> Mapping[str, Any]:
        context = getattr(self.env.unwrapped, "reward_context", None)
        return context() if callable(context) else {}


def _already_shaped(env: gymnasium.Env) -> bool:
    while isinstance(env, gymnasium.Wrapper):
        if isinstance(env, ShapeReward):
            return True
        env = env.env
    return False
