"""The ``vspo`` advantage estimator, registered in verl's ``ADV_ESTIMATOR_REGISTRY``.

GRPO's group-normalized outcome advantage (verl's own ``compute_grpo_outcome_advantage``), then
VSPO's value-smoothing clipping: rows of the k-th copy of a group (uid ``<uid>~copy<k>``, made
by the VSPO replay buffer) are scaled by ``1 / (1 + rate * k)`` and every advantage is clipped
to ``[-clip, clip]``. Trajectories whose loss mask is all zero (an env failure) are left out of
their group's statistics, so a crashed env does not shift its siblings' baseline; a group left
with one counted trajectory, or with no spread, gets advantage 0: the same judgement as the
sampler's (``vspo.counted`` and ``vspo.group_stats``), where plain GRPO would pay a lone
trajectory its raw score.

Knobs come from ``algorithm.vspo`` (``VSPOConfig``); select with ``algorithm.adv_estimator=vspo``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentgym._deprecated import module_aliases
from agentgym.integrations.verl._guard import require_verl
from agentgym.integrations.verl._section import select

require_verl()

import torch  # noqa: E402
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, register_adv_est  # noqa: E402

from agentgym.integrations.verl.vspo import (  # noqa: E402
    VSPOConfig,
    copy_index,
    counted,
    group_stats,
    smoothing_factor,
)

__all__ = ["ESTIMATOR_NAME", "compute_vspo_advantage", "vspo_config"]

ESTIMATOR_NAME = "vspo"

__getattr__ = module_aliases(__name__, {"vspo_settings": "vspo_config"})


def vspo_config(config: Any) -> VSPOConfig:
    """``VSPOConfig`` from verl's algorithm config (a DictConfig or ``AlgoConfig``), defaults when absent."""
    return VSPOConfig.from_section(select(config, "vspo"))


@register_adv_est(ESTIMATOR_NAME)
def compute_vspo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                           index: np.ndarray | None = None, config: Any = None, epsilon: float = 1e-6,
                           **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO advantages with VSPO's copy smoothing and clipping; returns ``(advantages, returns)``."""
    vspo = vspo_config(config)
    if index is None:
        index = np.zeros(token_level_rewards.shape[0], dtype=object)  # one group: the whole batch
    advantages = torch.zeros_like(token_level_rewards, dtype=torch.float32)
    live = torch.as_tensor(counted(response_mask.sum(dim=-1).cpu().numpy()))
    rows = torch.nonzero(live, as_tuple=False).flatten()
    if rows.numel():
        live_index = np.asarray(index, dtype=object)[rows.numpy()]
        grpo, _ = compute_grpo_outcome_advantage(
            token_level_rewards[rows], response_mask[rows], live_index, epsilon=epsilon,
            norm_adv_by_std_in_grpo=vspo.norm_by_std)
        advantages[rows] = grpo.to(advantages.dtype)
        advantages[_idle_rows(token_level_rewards.sum(dim=-1), live, index, vspo)] = 0.0
    scale = torch.tensor([smoothing_factor(copy_index(uid), vspo.smoothing_rate) for uid in index],
                         dtype=advantages.dtype)
    advantages = advantages * scale.unsqueeze(-1)
    if vspo.clip is not None:
        advantages = advantages.clamp(-vspo.clip, vspo.clip)
    advantages = advantages * response_mask
    return advantages, advantages


def _idle_rows(scores: torch.Tensor, live: torch.Tensor, index: Any, vspo: VSPOConfig) -> torch.Tensor:
    """Rows of groups the sampler judges uninformative (``vspo.group_stats`` over the counted rows):
    one counted trajectory, or a spread within ``zero_std_eps``. verl's GRPO would give a lone
    trajectory its raw score as advantage; the sampler and the estimator must agree it teaches nothing."""
    by_group: dict[Any, list[int]] = {}
    for row in torch.nonzero(live, as_tuple=False).flatten().tolist():
        by_group.setdefault(index[row], []).append(row)
    idle = torch.zeros_like(live, dtype=torch.bool)
    for uid, rows in by_group.items():
        if not group_stats(str(uid), [float(scores[r]) for r in rows], 1.0, vspo).informative:
            idle[rows] = True
    return idle
