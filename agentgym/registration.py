"""Every agentgym env id, registered with Gymnasium in one place.

``import agentgym`` calls ``register_envs()``; ``gymnasium.make("agentgym:TravelPlanner-v0")``
imports agentgym first and so works without an explicit import.

``reward=`` is applied here, at make time: ``gymnasium.make(ID, reward="planner_r1/dense")`` is
the env wrapped in ``agentgym.rewards.ShapeReward``, so the envs themselves hold no reward code.
A schedule in fractions of the run needs its length here, in the spec or as ``total_steps=T``;
a trainer that sends it with every reset wraps the env itself (``ShapeReward(env, spec)``).

Gymnasium's passive env checker runs here too, in a subclass that survives a failed first reset
(Gymnasium 1.4's own then fails every later step with a ``TypeError``, even after a good reset).
"""

from __future__ import annotations

import functools
from importlib import import_module
from typing import Any

import gymnasium

__all__ = ["ENV_IDS", "register_envs", "make_env", "env_class", "EnvChecker"]

# id -> env class. Turn limits live in the envs (``max_turns``), not in a TimeLimit wrapper,
# so an episode's truncation is reported in its StepInfo.
_ENV_CLASSES = {
    "TravelPlanner-v0": "agentgym.envs.travelplanner.env:TravelPlannerEnv",
    "SearchQA-v0": "agentgym.envs.searchqa.env:SearchQAEnv",
    "SearchQA-LongForm-v0": "agentgym.envs.searchqa.env:LongFormSearchQAEnv",
}
ENV_IDS = tuple(_ENV_CLASSES)


def make_env(env_class: str, *, reward: Any = None, total_steps: int | None = None, **kwargs: Any) -> gymnasium.Env:
    """The env ``env_class`` (``"module:Class"``) built from ``kwargs``, shaped when ``reward`` is
    given; ``total_steps`` is the run length of a schedule in fractions of the run."""
    from agentgym.core.env import allowed_kwargs, check_kwargs  # here: `agentgym --help` loads no env code
    from agentgym.errors import ConfigError

    module, _, name = env_class.partition(":")
    cls = getattr(import_module(module), name)
    if cls.renamed_kwargs is not None:  # a retired kwarg works, with a warning, and is checked by its new name
        kwargs = cls.renamed_kwargs.apply(kwargs)
    allowed = allowed_kwargs(cls)
    check_kwargs(kwargs, None if allowed is None else [*allowed, "reward", "total_steps"])
    shaper = None
    if reward is not None:
        from agentgym.rewards import build_shaper

        shaper = build_shaper(reward, env=cls)  # before the env: a spec that does not fit fails fast
        if shaper.needs_total_steps and total_steps is None:
            raise ConfigError("total_steps", None, _RUN_LENGTH_FIX)
    elif total_steps is not None:
        raise ConfigError("total_steps", total_steps, "None without reward= (it is a scheduled reward's run length)")
    env = cls(**kwargs)
    if shaper is not None:
        from agentgym.rewards.wrapper import ShapeReward

        env = ShapeReward(env, shaper, total_steps=total_steps)
    return EnvChecker(env)


_RUN_LENGTH_FIX = ("an int >= 1: this reward's stages are fractions of the run and the spec has no run length; "
                   "give it at make (gymnasium.make(ID, reward=..., total_steps=T)) or in the spec "
                   "(reward={'preset': 'planner_r1/curriculum', 'total_steps': T}); a trainer that sends the "
                   "run length with every reset wraps the env instead: ShapeReward(gymnasium.make(ID), reward)")


class EnvChecker(gymnasium.wrappers.PassiveEnvChecker):
    """Gymnasium's passive checker, except that a first reset that raises is checked again by the
    next one (Gymnasium 1.4 marks it done and then fails the first step on the missing result)."""

    @property
    def spec(self) -> Any:
        # Gymnasium's deep-copies the spec to flip ``disable_env_checker``, and with it every kwarg: a
        # World would be copied, a retriever holding a module fails (then ``make`` asserts). The
        # registered spec already says how ``make`` builds this env, checker included.
        return self.env.spec

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        first = not self.checked_reset
        try:
            return super().reset(seed=seed, options=options)
        except BaseException:
            if first:
                self.checked_reset = False
            raise


def env_class(env_id: str) -> type | None:
    """The class a registered ``env_id`` builds, read from its spec without building it (None: an
    unknown id, or an entry point that is a factory function, whose class is unknown until called)."""
    spec = gymnasium.registry.get(env_id)
    entry = getattr(spec, "entry_point", None)
    if isinstance(entry, functools.partial) and entry.func is make_env:  # ours: make_env("module:Class")
        entry = entry.args[0]
    if isinstance(entry, str):  # a module that fails to import fails here as it would at make
        module, _, name = entry.partition(":")
        entry = getattr(import_module(module), name, None)
    return entry if isinstance(entry, type) else None


def register_envs() -> None:
    for env_id, env_class in _ENV_CLASSES.items():
        if env_id not in gymnasium.registry:
            # The checker is applied by make_env (EnvChecker), so Gymnasium's own is off.
            gymnasium.register(env_id, entry_point=functools.partial(make_env, env_class), disable_env_checker=True)
