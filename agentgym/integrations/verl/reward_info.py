"""The ``reward_extra_info`` of a trajectory: floats under a key set fixed per env and reward spec.

verl builds its reward columns from the first trajectory's keys and its group filter looks one
key up in every trajectory, so every trajectory of a run must carry the same keys, whether its
episode finished, ran out of tokens or crashed::

    score             the reward paid (the shaped total, or the env's own return)
    outcome           the unshaped outcome, 1.0 iff solved: filter groups on this
    num_turns         model turns taken
    truncated         1.0 when the episode did not end by the agent's own answer
    env_failed        1.0 when the env raised
    abstained         1.0 when every reward term abstained (the reward says nothing)
    masked            1.0 when the trajectory is left out of training (loss mask 0): env failed,
                      reward abstained, or a configuration error
    term/<name>       each reward term's raw value (0.0 when absent or abstaining)
    term/<name>/abstained  1.0 when the term abstained
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentgym.rewards.shaper import RewardBreakdown

__all__ = ["EpisodeResult", "reward_keys", "term_names_for", "extra_info_from"]

BASE_KEYS = ("score", "outcome", "num_turns", "truncated", "env_failed", "abstained", "masked")


@dataclass
class EpisodeResult:
    """What the agent loop learned of an episode, enough to score it and to explain the score."""

    env_return: float = 0.0
    """Sum of the env's rewards (agentgym envs pay on the last step only)."""
    final_info: Mapping[str, Any] | None = None
    """The ``info`` of the last step taken (holds ``reward`` and ``evaluation`` when the episode ended)."""
    num_turns: int = 0
    done: bool = False
    """The env ended the episode (terminated or truncated by its own ``max_turns``)."""
    terminated: bool = False
    """The agent ended it (answer or give-up)."""
    stop_reason: str | None = None
    """Why the loop stopped: ``terminated``, ``env_truncated``, ``max_turns``, ``response_length``, ``env_error``."""
    error: str | None = None
    """``Type: message`` of the env exception, when one was raised."""
    fatal: bool = False
    """The error is the user's configuration (``ConfigError``, a missing dependency): the run must stop."""

    @property
    def abstained(self) -> bool:
        """Every reward term abstained (the reward helper's ``info["reward"]["abstained"]``)."""
        breakdown = self.breakdown
        return breakdown is not None and breakdown.all_abstained

    @property
    def breakdown(self) -> RewardBreakdown | None:
        """The shaped reward's breakdown, when the episode ended under a reward spec."""
        return RewardBreakdown.from_info(self.final_info) if self.done and self.final_info else None

    @property
    def masked(self) -> bool:
        return self.error is not None or self.abstained


def reward_keys(term_names: Sequence[str]) -> list[str]:
    """Every key of the extra info, in order, for a reward spec with these terms."""
    return [*BASE_KEYS, *(f"term/{n}" for n in term_names), *(f"term/{n}/abstained" for n in term_names)]


@lru_cache(maxsize=64)
def _term_names_cached(spec_key: str) -> tuple[str, ...]:
    import json

    from agentgym.rewards import build_shaper

    return build_shaper(json.loads(spec_key)).term_names


def term_names_for(reward: Any) -> tuple[str, ...]:
    """The term names of a reward preset or spec (none without a spec)."""
    if reward is None:
        return ()
    import json

    return _term_names_cached(json.dumps(reward, sort_keys=True, default=str))


def score_of(result: EpisodeResult, *, failure_reward: float, unfinished_reward: float) -> float:
    """The trajectory's reward: the env's when the episode ended, else the configured fallback."""
    if result.error is not None:
        return float(failure_reward)
    if not result.done:
        return float(unfinished_reward)
    return _finite(result.env_return)


def extra_info_from(result: EpisodeResult, term_names: Sequence[str], score: float) -> dict[str, float]:
    """The fixed-key float dict for verl's ``reward_extra_info``."""
    breakdown = result.breakdown
    if breakdown is not None:
        outcome = breakdown.outcome
    else:
        outcome = result.env_return if result.done and result.error is None else 0.0
    info = {"score": float(score), "outcome": _finite(outcome), "num_turns": float(result.num_turns),
            "truncated": 0.0 if result.terminated else 1.0, "env_failed": 0.0 if result.error is None else 1.0,
            "abstained": float(result.abstained), "masked": float(result.masked)}
    terms = breakdown.terms if breakdown is not None else {}
    for name in term_names:
        term = terms.get(name)
        info[f"term/{name}"] = 0.0 if term is None or term.raw is None else term.raw
    for name in term_names:
        term = terms.get(name)
        info[f"term/{name}/abstained"] = 1.0 if term is not None and term.abstained else 0.0
    return info


def _finite(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0
