"""Controls for a learning run: the same run with the learning signal broken, which must learn less.

A run that learns proves little on its own: a reward attached to the wrong trajectory, or
observation tokens trained on, still moves some curve. Run the control beside it:

* ``shuffle_rewards(reward_func, seed)`` pays each trajectory the reward of another one of the
  same batch (a fixed-seed permutation): the reward's distribution is kept, its link to what the
  model did is cut;
* ``rollout_func(..., train_on_observations=True)`` leaves observation tokens in the loss
  (``env_mask`` 1 everywhere), as a trainer that forgot the mask would;
* ``rollout_func(..., failures_as_zeros=True)`` pays a rollout that failed outside the model (a
  retriever that dropped the connection, an env that raised) 0.0 and trains on it, as a trainer
  that counts failures as zeros does: the failure enters its group's baseline;
* ``frozen_clock()`` (a context manager) resets every env at training step 0, whatever step
  training is at: a scheduled reward then stays in its first stage, as it would behind a trainer
  whose schedule clock never advances.

``run_arm`` trains one of them (``ARMS``) for a number of steps and returns the rollout's history.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = ["ARMS", "shuffle_rewards", "frozen_clock", "run_arm"]


def shuffle_rewards(reward_func: Callable[..., list[float]], seed: int = 0) -> Callable[..., list[float]]:
    """``reward_func`` with its rewards permuted across the batch (a new permutation per call)."""
    generator = np.random.default_rng(seed)

    @functools.wraps(reward_func)
    def shuffled(*args: Any, **kwargs: Any) -> list[float]:
        rewards = list(reward_func(*args, **kwargs))
        return [rewards[i] for i in generator.permutation(len(rewards))]

    return shuffled


@contextlib.contextmanager
def frozen_clock() -> Iterator[None]:
    """Within the block, every rollout's reset gets training step 0 (both trainers reset through
    ``agentgym.integrations.rollouts``); the run length is kept."""
    from agentgym.integrations import rollouts

    reset_options = rollouts.reset_options

    def at_step_zero(task: Any, clock: Any, **kwargs: Any) -> dict[str, Any]:
        stopped = rollouts.Clock(None if clock.training_step is None else 0, clock.total_steps)
        return reset_options(task, stopped, **kwargs)

    rollouts.reset_options = at_step_zero
    try:
        yield
    finally:
        rollouts.reset_options = reset_options


ARMS = ("real", "shuffled", "observations", "zeros")
"""``real``: the recipe as is; ``shuffled``: rewards shuffled across the batch; ``observations``:
observation tokens trained on; ``zeros``: failed rollouts paid 0.0 and trained on."""


def run_arm(recipe: Any, arm: str, *, seed: int, steps: int, output_dir: str, grpo: dict[str, Any] | None = None,
            tokenizer: Any = None, constraint: Any = None, **rollout_kwargs: Any) -> list[dict[str, Any]]:
    """Train a ``TrlRecipe`` for ``steps`` steps as ``arm``, model and sampling seeded by ``seed``;
    returns the rollout's history (one summary per step: reward, terms, action mix, and
    ``zero_variance``, the share of groups whose paid rewards were all equal).

    ``tokenizer`` replaces the recipe's (the tiny model is then built over it, seeded by ``seed``);
    ``constraint`` replaces the recipe's constrained sampling; ``rollout_kwargs`` go to ``rollout_func``.
    Torch runs on one thread meanwhile: the model is tiny, and on a shared machine more threads
    only wait for each other (and cost several times the CPU)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train_arm(recipe, arm, seed, steps, output_dir, grpo, tokenizer, constraint, rollout_kwargs)
    finally:
        torch.set_num_threads(threads)


def _train_arm(recipe: Any, arm: str, seed: int, steps: int, output_dir: str, grpo: dict[str, Any] | None,
               tokenizer: Any, constraint: Any, rollout_kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    from agentgym._toolbox import require_choice
    from agentgym.integrations.trl.rewards import agentgym_reward
    from agentgym.integrations.trl.tiny import tiny_qwen2
    from agentgym.integrations.trl.train import build_run

    require_choice("arm", arm, ARMS)
    recipe = recipe.model_copy(update={"model": recipe.model.model_copy(update={"seed": seed})})
    model = None if tokenizer is None else tiny_qwen2(tokenizer, hidden_size=recipe.model.hidden_size,
                                                      layers=recipe.model.layers, seed=seed)
    shares: list[float] = []
    group = int({**recipe.grpo, **(grpo or {})}.get("num_generations", 8))
    reward = shuffle_rewards(agentgym_reward, seed) if arm == "shuffled" else agentgym_reward
    trainer, rollout = build_run(
        recipe, grpo={"max_steps": steps, "seed": seed, "output_dir": output_dir, "disable_tqdm": True, **(grpo or {})},
        reward_funcs=[_zero_variance_recorded(reward, group, shares)],
        tokenizer=tokenizer, model=model, train_on_observations=arm == "observations",
        failures_as_zeros=arm == "zeros", **rollout_kwargs)
    if constraint is not None:
        rollout.constraint = constraint
    trainer.train()
    for entry, share in zip(rollout.history, shares):
        entry["zero_variance"] = share
    return rollout.history


def _zero_variance_recorded(reward_func: Callable[..., list[float]], group: int, shares: list[float]) -> Callable:
    """``reward_func``, noting per call the share of its groups (``group`` consecutive completions,
    as TRL groups them) whose paid rewards are all equal (``zero_variance_share``; rollouts paid
    None are out of their group)."""
    from agentgym.rewards import zero_variance_share

    @functools.wraps(reward_func)
    def recorded(*args: Any, **kwargs: Any) -> list[float]:
        rewards = list(reward_func(*args, **kwargs))
        paid = [(r, i // group) for i, r in enumerate(rewards) if r is not None]
        shares.append(zero_variance_share([r for r, _ in paid], [g for _, g in paid]))
        return rewards

    return recorded
