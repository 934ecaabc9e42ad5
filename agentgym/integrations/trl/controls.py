"""Controls for a learning run: the same run with the learning signal broken, which must learn less.

A run that learns proves little on its own: a reward attached to the wrong trajectory, or
observation tokens trained on, still moves some curve. Run the control beside it:

* ``shuffle_rewards(reward_func, seed)`` pays each trajectory the reward of another one of the
  same batch (a fixed-seed permutation): the reward's distribution is kept, its link to what the
  model did is cut;
* ``rollout_func(..., train_on_observations=True)`` leaves observation tokens in the loss
  (``env_mask`` 1 everywhere), as a trainer that forgot the mask would.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ARMS", "shuffle_rewards", "run_arm"]


def shuffle_rewards(reward_func: Callable[..., list[float]], seed: int = 0) -> Callable[..., list[float]]:
    """``reward_func`` with its rewards permuted across the batch (a new permutation per call)."""
    generator = np.random.default_rng(seed)

    @functools.wraps(reward_func)
    def shuffled(*args: Any, **kwargs: Any) -> list[float]:
        rewards = list(reward_func(*args, **kwargs))
        return [rewards[i] for i in generator.permutation(len(rewards))]

    return shuffled


ARMS = ("real", "shuffled", "observations")
"""``real``: the recipe as is; ``shuffled``: rewards shuffled across the batch; ``observations``:
observation tokens trained on."""


def run_arm(recipe: Any, arm: str, *, seed: int, steps: int, output_dir: str,
            grpo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Train a ``TrlRecipe`` for ``steps`` steps as ``arm``, model and sampling seeded by ``seed``;
    returns the rollout's history (one summary per step: reward, terms, action mix)."""
    from agentgym._toolbox import require_choice
    from agentgym.integrations.trl.rewards import agentgym_reward
    from agentgym.integrations.trl.train import build_run

    require_choice("arm", arm, ARMS)
    recipe = recipe.model_copy(update={"model": recipe.model.model_copy(update={"seed": seed})})
    trainer, rollout = build_run(
        recipe, grpo={"max_steps": steps, "seed": seed, "output_dir": output_dir, "disable_tqdm": True, **(grpo or {})},
        reward_funcs=[shuffle_rewards(agentgym_reward, seed)] if arm == "shuffled" else None,
        train_on_observations=arm == "observations")
    trainer.train()
    return rollout.history
