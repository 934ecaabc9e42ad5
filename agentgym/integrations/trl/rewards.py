"""Reward functions for ``GRPOTrainer(reward_funcs=...)`` over what the agentgym rollout returns.

TRL calls each with the batch's extra rollout fields as keyword arguments. ``agentgym_reward``
pays the env's shaped reward (the env shaped it at TRL's ``global_step`` of ``max_steps``: see
``rollout.schedule_clock``) and logs, as TRL metrics, the mean of every reward term, the outcome
and the share of episodes that ended each way. ``term_reward(name)`` pays one term's raw value,
for weighting terms on TRL's side (``GRPOConfig.reward_weights``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentgym.errors import ConfigError

__all__ = ["agentgym_reward", "term_reward", "METRIC_PREFIX"]

METRIC_PREFIX = "agentgym"
"""Metric names: ``agentgym/term/<name>``, ``agentgym/outcome``, ``agentgym/stop/<reason>``."""


def agentgym_reward(completions: Sequence[Any], shaped_reward: Sequence[float] | None = None,
                    reward_terms: Sequence[Mapping[str, float]] | None = None,
                    outcome: Sequence[float] | None = None, episode: Sequence[Mapping[str, Any]] | None = None,
                    log_metric: Callable[[str, float], None] | None = None, **_: Any) -> list[float]:
    """The env's shaped reward per completion; per-term means go to TRL's metrics."""
    if shaped_reward is None:
        raise ConfigError("rollout_func", None, "agentgym.integrations.trl.rollout_func(...): this reward reads "
                          "its 'shaped_reward' field")
    rewards = [float(r) for r in shaped_reward]
    if log_metric is not None and rewards:
        _log_means(log_metric, reward_terms or [], outcome or [], episode or [])
    return rewards


def term_reward(name: str) -> Callable[..., list[float | None]]:
    """A reward function paying the raw value of the reward spec's term ``name``."""

    def reward(completions: Sequence[Any], reward_terms: Sequence[Mapping[str, float]] | None = None,
               **_: Any) -> list[float | None]:
        if reward_terms is None or (reward_terms and name not in reward_terms[0]):
            known = sorted(reward_terms[0]) if reward_terms else []
            raise ConfigError("term", name, f"a term of the rollout's reward spec: {known}")
        return [float(terms[name]) for terms in reward_terms]

    reward.__name__ = f"term_{name}"
    return reward


def _log_means(log_metric: Callable[[str, float], None], terms: Sequence[Mapping[str, float]],
               outcome: Sequence[float], episodes: Sequence[Mapping[str, Any]]) -> None:
    n = len(terms)
    for name in terms[0] if terms else ():
        log_metric(f"{METRIC_PREFIX}/term/{name}", sum(float(t[name]) for t in terms) / n)
    if outcome:
        log_metric(f"{METRIC_PREFIX}/outcome", sum(float(o) for o in outcome) / len(outcome))
    reasons: dict[str, int] = {}
    for episode in episodes:
        reason = str(episode.get("stop_reason"))
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in reasons.items():
        log_metric(f"{METRIC_PREFIX}/stop/{reason}", count / len(episodes))
