"""Every agentgym env id, registered with Gymnasium in one place.

``import agentgym`` calls ``register_envs()``; ``gymnasium.make("agentgym:TravelPlanner-v0")``
imports agentgym first and so works without an explicit import.

``reward=`` is applied here, at make time: ``gymnasium.make(ID, reward="planner_r1/dense")`` is
the env wrapped in ``agentgym.rewards.ShapeReward``, so the envs themselves hold no reward code.
"""

from __future__ import annotations

import functools
from importlib import import_module
from typing import Any

import gymnasium

__all__ = ["ENV_IDS", "register_envs", "make_env"]

# id -> env class. Turn limits live in the envs (``max_turns``), not in a TimeLimit wrapper,
# so an episode's truncation is reported in its StepInfo.
_ENV_CLASSES = {
    "TravelPlanner-v0": "agentgym.envs.travelplanner.env:TravelPlannerEnv",
    "SearchQA-v0": "agentgym.envs.searchqa.env:SearchQAEnv",
    "SearchQA-LongForm-v0": "agentgym.envs.searchqa.env:LongFormSearchQAEnv",
}
ENV_IDS = tuple(_ENV_CLASSES)


def make_env(env_class: str, *, reward: Any = None, **kwargs: Any) -> gymnasium.Env:
    """The env ``env_class`` (``"module:Class"``) built from ``kwargs``, shaped when ``reward`` is given."""
    from agentgym.core.env import allowed_kwargs, check_kwargs  # here: `agentgym --help` loads no env code

    module, _, name = env_class.partition(":")
    cls = getattr(import_module(module), name)
    allowed = allowed_kwargs(cls)
    check_kwargs(kwargs, None if allowed is None else [*allowed, "reward"])
    env = cls(**kwargs)
    if reward is None:
        return env
    from agentgym.rewards.wrapper import ShapeReward

    return ShapeReward(env, reward)


def register_envs() -> None:
    for env_id, env_class in _ENV_CLASSES.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, entry_point=functools.partial(make_env, env_class), disable_env_checker=False)
