"""VSPO (Value-based Sampling Policy Optimization, arXiv 2512.07478): the math, without verl.

GRPO wastes every group whose rewards are all equal: its advantages are zero. VSPO replaces such
groups with copies of informative groups drawn by task value, and damps the copies::

    V      = (R_max - mean) * spread        per group; (R_max - mean) is difficulty, spread uncertainty
    evict    groups with std <= zero_std_eps (no learning signal)
    refill   the freed slots with copies of informative groups drawn with probability ∝ V
    smooth   the k-th copy's advantages are scaled by 1 / (1 + rate * k) (the original has k = 0)
    clip     |A| <= clip

The paper leaves the replacement pool, the smoothing formula and its constants open; the choices
below follow the project's reading (docs/verl.md, "VSPO"): copies from the current batch,
extra generation only when nothing is left to copy, ``1/(1+k)`` smoothing and ``|A| <= 3``.
``sampler`` (the V1 replay buffer) and ``estimator`` (the ``vspo`` advantage estimator) apply it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentgym.integrations.verl._section import read_section

__all__ = ["VSPOConfig", "GroupStats", "BatchPlan", "task_value", "group_stats", "plan_batch", "counted",
           "draw_copies", "copy_uid", "copy_index", "smoothing_factor", "COPY_SEPARATOR"]

COPY_SEPARATOR = "~copy"
"""Joins a group's uid and its copy number (``uid~copy2``); never ``_``, which verl's keys split on."""


class VSPOConfig(BaseModel):
    """Every VSPO knob; ``algorithm.vspo`` in the verl config (the replay buffer reads the same section)."""

    model_config = ConfigDict(extra="forbid")

    metric: str = "reward"
    """The per-trajectory value groups are judged on: ``reward`` (the reward the advantages are
    computed from, so zero variance means exactly zero advantage) or a ``reward_extra_info`` key
    such as ``outcome`` (the unshaped 0/1 outcome)."""
    r_max: float | None = None
    """R_max of the task value; None: the largest metric value seen so far in the run. A
    configured value below a reward actually seen is raised to it, so V is never negative."""
    spread: Literal["std", "var"] = "std"
    """The uncertainty factor: the group's standard deviation (population, ddof=0) or its variance."""
    zero_std_eps: float = Field(default=1e-6, ge=0.0)
    """Groups whose metric std is at most this are zero-variance (evicted)."""
    refill: Literal["value", "uniform", "none"] = "value"
    """How freed slots are filled: copies drawn ∝ V, copies drawn uniformly (the paper's
    random-sampling ablation), or not at all (zero-variance groups stay, as in GRPO)."""
    max_extra_batches: float = Field(default=1.0, ge=0.0)
    """Extra generation bound, in batches per step: fresh prompts are generated only while no
    informative group is left to copy, and at most ``max_extra_batches * train_batch_size``."""
    smoothing_rate: float = Field(default=1.0, ge=0.0)
    """The k-th copy's advantages are scaled by ``1 / (1 + smoothing_rate * k)``; 0 disables."""
    clip: float | None = Field(default=3.0, gt=0.0)
    """Advantages are clipped to ``[-clip, clip]`` after smoothing; None disables."""
    norm_by_std: bool = True
    """GRPO's division by the group std (False: Dr.GRPO's mean-centring only)."""
    seed: int | None = 0
    """Seed of the refill draws (None: fresh entropy each run)."""

    @classmethod
    def from_section(cls, section: Any) -> VSPOConfig:
        """From ``algorithm.vspo`` (an OmegaConf node, a dict, or None for the defaults)."""
        return read_section(cls, section)


@dataclass(frozen=True)
class GroupStats:
    """One group's statistics on the VSPO metric."""

    uid: str
    mean: float
    std: float
    value: float
    size: int

    @property
    def informative(self) -> bool:
        return self.size > 1 and self.std > 0.0


@dataclass
class BatchPlan:
    """What the replay buffer does with one step's finished groups."""

    keep: list[str] = field(default_factory=list)
    """Groups trained on as they are."""
    copies: list[tuple[str, int]] = field(default_factory=list)
    """(source uid, copy number >= 1) for each copy added."""
    drop: list[str] = field(default_factory=list)
    """Groups removed: zero-variance (evicted) and surplus."""
    evicted: int = 0


def counted(mask_sums: Any) -> np.ndarray:
    """Which trajectories count in their group's statistics: those with any trained token. A failed
    or masked trajectory (loss mask all zero) counts in neither the sampler's judgement nor the
    estimator's baseline; both call this one function, so they always agree on a group."""
    return np.asarray(mask_sums, dtype=float).reshape(-1) > 0


def task_value(rewards: Sequence[float], r_max: float, spread: str = "std") -> float:
    """V = (R_max - mean) * spread of one group's rewards (0 for a single reward)."""
    values = np.asarray(rewards, dtype=float)
    if values.size < 2:
        return 0.0
    std = float(values.std())
    factor = std if spread == "std" else std * std
    return max(0.0, (r_max - float(values.mean())) * factor)


def group_stats(uid: str, rewards: Sequence[float], r_max: float, config: VSPOConfig) -> GroupStats:
    """The group's mean, std (ddof=0; 0 when at most ``zero_std_eps``) and task value."""
    values = np.asarray(rewards, dtype=float)
    std = float(values.std()) if values.size else 0.0
    std = 0.0 if std <= config.zero_std_eps else std
    value = task_value(values, r_max, config.spread) if std > 0.0 else 0.0
    return GroupStats(uid, float(values.mean()) if values.size else 0.0, std, value, int(values.size))


def plan_batch(groups: Sequence[GroupStats], batch_size: int, config: VSPOConfig,
               rng: np.random.Generator) -> BatchPlan:
    """Choose ``batch_size`` groups: informative ones first (in arrival order), then copies."""
    informative = [g for g in groups if g.informative]
    idle = [g for g in groups if not g.informative]
    plan = BatchPlan()
    if config.refill == "none" or not informative:
        chosen = list(groups[:batch_size])  # nothing to copy: zero-variance groups stay, as in GRPO
        plan.keep = [g.uid for g in chosen]
        plan.drop = [g.uid for g in groups[batch_size:]]
        return plan
    plan.keep = [g.uid for g in informative[:batch_size]]
    plan.drop = [g.uid for g in informative[batch_size:]] + [g.uid for g in idle]
    plan.evicted = len(idle)
    missing = batch_size - len(plan.keep)
    plan.copies = draw_copies(informative[:batch_size], missing, rng, uniform=config.refill == "uniform")
    return plan


def draw_copies(candidates: Sequence[GroupStats], count: int, rng: np.random.Generator, *,
                uniform: bool = False) -> list[tuple[str, int]]:
    """``count`` draws with replacement, P(g) ∝ V_g (uniform when asked, or when every V is 0);
    each draw is numbered by how many copies of its group came before it (from 1)."""
    if count <= 0 or not candidates:
        return []
    weights = np.array([g.value for g in candidates], dtype=float)
    if uniform or not np.isfinite(weights).all() or weights.sum() <= 0.0:
        weights = np.ones(len(candidates))
    picks = rng.choice(len(candidates), size=count, replace=True, p=weights / weights.sum())
    seen: dict[str, int] = {}
    copies = []
    for i in picks:
        uid = candidates[int(i)].uid
        seen[uid] = seen.get(uid, 0) + 1
        copies.append((uid, seen[uid]))
    return copies


def copy_uid(uid: str, k: int) -> str:
    """The uid of the k-th copy of a group."""
    return f"{uid}{COPY_SEPARATOR}{k}"


def copy_index(uid: Any) -> int:
    """The copy number encoded in a uid (0 for an original group)."""
    head, sep, tail = str(uid).rpartition(COPY_SEPARATOR)
    return int(tail) if sep and tail.isdigit() else 0


def smoothing_factor(k: int, rate: float) -> float:
    """The advantage scale of the k-th copy: ``1 / (1 + rate * k)``."""
    return 1.0 / (1.0 + rate * k)


def effective_r_max(config: VSPOConfig, seen_max: float) -> float:
    """R_max in force: the configured one (never below a reward seen) or the running max."""
    if config.r_max is None:
        return seen_max
    return max(config.r_max, seen_max) if math.isfinite(seen_max) else config.r_max
