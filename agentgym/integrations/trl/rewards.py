"""Reward functions for ``GRPOTrainer(reward_funcs=...)`` over what the agentgym rollout returns.

TRL calls each with the batch's extra rollout fields as keyword arguments. ``agentgym_reward``
pays the env's shaped reward (the env shaped it at TRL's ``global_step`` of ``max_steps``: see
``rollout.schedule_clock``) and logs, as TRL metrics, the mean of every reward term, the outcome,
the share of episodes that ended each way and the share left out for each reason
(``agentgym/failed/<reason>``, as verl logs it). ``term_reward(name)`` pays one term's raw value,
for weighting terms on TRL's side (``GRPOConfig.reward_weights``).

A rollout left out of training (something outside the model failed, or every term abstained) is
paid None, and so is a term that abstained: TRL turns None into NaN and leaves it out of the
group's baseline (a completion every function paid None gets advantage 0), where a 0.0 would
drag the baseline down.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentgym.errors import ConfigError

__all__ = ["agentgym_reward", "term_reward", "METRIC_PREFIX"]

METRIC_PREFIX = "agentgym"
"""Metric names: ``agentgym/term/<name>``, ``agentgym/outcome``, ``agentgym/stop/<reason>``,
``agentgym/failed/<reason>``, and the reward lab's ``agentgym/reward/...`` (``group_metrics``)."""


def agentgym_reward(completions: Sequence[Any], shaped_reward: Sequence[float | None] | None = None,
                    reward_terms: Sequence[Mapping[str, float | None]] | None = None,
                    outcome: Sequence[float] | None = None, episode: Sequence[Mapping[str, Any]] | None = None,
                    reward_signal: Sequence[Mapping[str, float]] | None = None,
                    log_metric: Callable[[str, float], None] | None = None, **_: Any) -> list[float | None]:
    """The env's shaped reward per completion (None when the rollout is left out); per-term means and
    the batch's reward-lab figures go to TRL's metrics."""
    if shaped_reward is None:
        raise ConfigError("rollout_func", None, "agentgym.integrations.trl.rollout_func(...): this reward reads "
                          "its 'shaped_reward' field")
    rewards = [None if r is None else float(r) for r in shaped_reward]
    if log_metric is not None and rewards:
        _log_means(log_metric, reward_terms or [], outcome or [], episode or [])
        for name, value in (reward_signal[0] if reward_signal else {}).items():
            if math.isfinite(value):  # an undefined figure (no group with a spread) is left out of the mean
                log_metric(name, value)
    return rewards


def term_reward(name: str) -> Callable[..., list[float | None]]:
    """A reward function paying the raw value of the reward spec's term ``name`` (None when it abstained)."""

    def reward(completions: Sequence[Any], reward_terms: Sequence[Mapping[str, float | None]] | None = None,
               **_: Any) -> list[float | None]:
        if reward_terms is None or (reward_terms and name not in reward_terms[0]):
            known = sorted(reward_terms[0]) if reward_terms else []
            raise ConfigError("term", name, f"a term of the rollout's reward spec: {known}")
        return [None if terms[name] is None else float(terms[name]) for terms in reward_terms]

    reward.__name__ = f"term_{name}"
    return reward


def _log_means(log_metric: Callable[[str, float], None], terms: Sequence[Mapping[str, float | None]],
               outcome: Sequence[float], episodes: Sequence[Mapping[str, Any]]) -> None:
    for name in terms[0] if terms else ():
        values = [float(t[name]) for t in terms if t[name] is not None]
        if values:
            log_metric(f"{METRIC_PREFIX}/term/{name}", sum(values) / len(values))
    if outcome:
        log_metric(f"{METRIC_PREFIX}/outcome", sum(float(o) for o in outcome) / len(outcome))
    reasons: dict[str, int] = {}
    for episode in episodes:
        reason = str(episode.get("stop_reason"))
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in reasons.items():
        log_metric(f"{METRIC_PREFIX}/stop/{reason}", count / len(episodes))
    left_out: dict[str, int] = {}
    for episode in episodes:
        if episode.get("left_out"):
            left_out[str(episode["left_out"])] = left_out.get(str(episode["left_out"]), 0) + 1
    for reason, count in left_out.items():
        log_metric(f"{METRIC_PREFIX}/failed/{reason}", count / len(episodes))
