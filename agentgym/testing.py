"""A reusable contract check for text envs, in the spirit of Gymnasium's ``check_env``.

``check_text_env(env_id, actions)`` checks what a trainer relies on, beyond the Gymnasium API:

* ``gymnasium.utils.env_checker.check_env`` passes on the unwrapped env;
* ``gymnasium.make`` plays ``actions`` without a checker warning;
* the same seed and actions give the same observations, rewards and infos;
* the env pickles mid-episode and the copy continues identically;
* every ``info`` reads back as a ``StepInfo``;
* random and mangled text actions never raise, keep rewards finite and observations in the space.

It raises ``AssertionError`` naming the broken promise.
"""

from __future__ import annotations

import math
import pickle
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env

from agentgym.core.types import StepInfo

__all__ = ["check_text_env", "mangled_actions"]

_NASTY = ["", " ", "\n\n", "\x00\x01\x1b[2J", "[" * 50, "]" * 50, "<" * 20, "{\"name\": ", "🙂" * 100,
          "<answer></answer>", "<answer>", "</answer>", "<tool_call>", "x" * 10_000, "\ud800"]


def check_text_env(env_id: str, actions: Sequence[str], *, seed: int = 0, fuzz: int = 200, **kwargs: Any) -> None:
    """Run every contract check on ``gymnasium.make(env_id, **kwargs)`` with ``actions`` as a script."""
    check_env(gymnasium.make(env_id, **kwargs).unwrapped, skip_render_check=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = _play(gymnasium.make(env_id, **kwargs), seed, actions)
    assert first == _play(gymnasium.make(env_id, **kwargs), seed, actions), "same seed and actions differ"
    _check_pickle(gymnasium.make(env_id, **kwargs).unwrapped, seed, actions)
    _check_fuzz(gymnasium.make(env_id, **kwargs), seed, mangled_actions(actions, fuzz, seed))


def mangled_actions(actions: Sequence[str], n: int, seed: int = 0) -> list[str]:
    """``n`` actions: the script's, cut, spliced and doubled at random, plus known-nasty strings."""
    rng = np.random.default_rng(seed)
    pool = list(actions) + _NASTY
    out = []
    for _ in range(n):
        a, b = pool[int(rng.integers(len(pool)))], pool[int(rng.integers(len(pool)))]
        cut = int(rng.integers(len(a) + 1))
        out.append(rng.choice([a[:cut], a[:cut] + b, a + a, b + a[cut:]]))
    return out


def _play(env: gymnasium.Env, seed: int, actions: Sequence[str]) -> list[Any]:
    transcript: list[Any] = [env.reset(seed=seed)]
    for action in actions:
        step = env.step(action)
        assert math.isfinite(step[1]), f"non-finite reward after {action[:60]!r}"
        StepInfo.from_info(step[4])
        transcript.append(step)
        if step[2] or step[3]:
            break
    return transcript


def _check_pickle(env: gymnasium.Env, seed: int, actions: Sequence[str]) -> None:
    env.reset(seed=seed)
    head, tail = actions[: len(actions) // 2], actions[len(actions) // 2:]
    for action in head:
        if env.step(action)[2]:
            return
    clone = pickle.loads(pickle.dumps(env))
    for action in tail:
        mine, theirs = env.step(action), clone.step(action)
        assert mine == theirs, f"a pickled copy diverged on {action!r}"
        if mine[2] or mine[3]:
            return


def _check_fuzz(env: gymnasium.Env, seed: int, actions: Sequence[str]) -> None:
    env.reset(seed=seed)
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs), f"observation outside the space after {action[:60]!r}"
        assert math.isfinite(reward), f"non-finite reward after {action[:60]!r}"
        StepInfo.from_info(info)
        if terminated or truncated:
            env.reset(seed=seed)
