"""Watching shaped rewards during training: per-term drift and zero-variance groups.

Reward hacking shows up as a term that keeps climbing while the outcome does not; a GRPO
batch wastes the groups whose rewards are all equal (zero advantage). ``RewardMonitor.update``
turns each batch of breakdowns into flat metrics for your logger::

    monitor = RewardMonitor()
    metrics = monitor.update([RewardBreakdown.from_info(info) for info in final_infos], groups=prompt_ids)
    # {"reward/total_mean", "reward/outcome_mean", "reward/zero_variance_groups",
    #  "reward/zero_variance_groups_outcome", "reward/<term>/mean", "reward/<term>/drift",
    #  "reward/<term>/abstain_rate", ...}
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from agentgym._toolbox import is_number
from agentgym.errors import ConfigError
from agentgym.rewards.shaper import RewardBreakdown, TermValue, build_shaper

__all__ = ["RewardMonitor", "zero_variance_share", "stages_in_force"]


def zero_variance_share(values: Sequence[float], groups: Sequence[Hashable], tolerance: float = 1e-9) -> float:
    """Share of groups (rollouts of one prompt) whose values are all equal within ``tolerance``."""
    if len(values) != len(groups):
        raise ConfigError("groups", f"{len(groups)} group ids", f"one group id per value ({len(values)})")
    by_group: dict[Hashable, list[float]] = {}
    for value, group in zip(values, groups):
        by_group.setdefault(group, []).append(value)
    if not by_group:
        return 0.0
    flat = sum(max(v) - min(v) <= tolerance for v in by_group.values())
    return flat / len(by_group)


def stages_in_force(reward: Any, rewards: Sequence[float], term_means: Mapping[str, Sequence[float]],
                    tolerance: float = 1e-6) -> list[str | None]:
    """Which stage of a staged reward paid each logged step, read back from the logs alone: the
    stage whose weights turn the step's mean term values (``term_means[name][step]``, raw values)
    into its mean reward (``rewards[step]``), or None when no stage, or more than one, does.

    The mean of a weighted sum is the weighted sum of the means, so this holds for stages of
    constant weights without gates, caps or penalties, whose terms never abstain; any other spec
    is refused (``ConfigError``)."""
    spec = build_shaper(reward).spec
    if not spec.stages:
        raise ConfigError("reward", "a spec without stages", "a staged reward (stages: [...])")
    weights: dict[str, dict[str, float]] = {}
    for stage in spec.stages:
        for term in stage.terms:
            if not is_number(term.weight) or term.gate is not None or term.cap is not None or term.penalty:
                raise ConfigError(f"stages[{stage.name}].terms[{term.key}]", term.kind,
                                  "a constant weight without gate, cap or penalty (the logged means then add up)")
        weights[stage.name] = {term.key: float(term.weight) for term in stage.terms}
    found: list[str | None] = []
    for step, reward_mean in enumerate(rewards):
        paid = [name for name, w in weights.items()
                if abs(sum(v * term_means[t][step] for t, v in w.items()) - reward_mean) <= tolerance]
        found.append(paid[0] if len(paid) == 1 else None)
    return found


class RewardMonitor:
    """Per-term means, abstention rates and drift across batches, and zero-variance group shares.

    Args:
        smoothing: weight of the past in the running mean each term's drift is measured
            against (an exponential moving average of the batch means).
    """

    def __init__(self, smoothing: float = 0.9) -> None:
        if not is_number(smoothing) or not 0 <= smoothing < 1:
            raise ConfigError("smoothing", smoothing, "a number in [0, 1)")
        self.smoothing = float(smoothing)
        self._baseline: dict[str, float] = {}

    def update(self, breakdowns: Sequence[RewardBreakdown | Mapping[str, Any]],
               groups: Sequence[Hashable] | None = None, prefix: str = "reward") -> dict[str, float]:
        """Metrics of one batch; ``groups`` (one id per breakdown) adds the zero-variance shares.

        A breakdown may also be given as the dict ``info["reward"]`` holds."""
        rows = [b if isinstance(b, RewardBreakdown) else RewardBreakdown.from_dict(b) for b in breakdowns]
        if not rows:
            return {}
        totals = [r.total for r in rows]
        outcomes = [r.outcome for r in rows]
        metrics = {f"{prefix}/total_mean": _mean(totals), f"{prefix}/outcome_mean": _mean(outcomes)}
        if groups is not None:
            metrics[f"{prefix}/zero_variance_groups"] = zero_variance_share(totals, groups)
            metrics[f"{prefix}/zero_variance_groups_outcome"] = zero_variance_share(outcomes, groups)
        for name in dict.fromkeys(n for r in rows for n in r.terms):
            metrics.update(self._term_metrics(name, [r.terms.get(name) for r in rows], prefix))
        return metrics

    def _term_metrics(self, name: str, values: list[TermValue | None], prefix: str) -> dict[str, float]:
        raws = [v.raw for v in values if v is not None and v.raw is not None]
        abstained = sum(1 for v in values if v is not None and v.abstained)
        mean = _mean(raws)
        out = {f"{prefix}/{name}/mean": mean, f"{prefix}/{name}/abstain_rate": abstained / len(values),
               f"{prefix}/{name}/contribution_mean": _mean([v.contribution for v in values if v])}
        if not math.isnan(mean):
            baseline = self._baseline.get(name, mean)
            out[f"{prefix}/{name}/drift"] = mean - baseline
            self._baseline[name] = self.smoothing * baseline + (1 - self.smoothing) * mean
        return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan
