"""RewardMonitor: zero-variance group shares and per-term drift across batches."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reward_helpers import scripted_episode, scripted_term

from agentgym import ConfigError
from agentgym.rewards import RewardMonitor, build_shaper, zero_variance_share


@given(groups=st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=1, max_size=8), min_size=1, max_size=10))
def test_zero_variance_share_counts_groups_whose_rewards_are_all_equal(groups):
    values = [v for g in groups for v in g]
    ids = [i for i, g in enumerate(groups) for _ in g]
    expected = sum(len(set(g)) == 1 for g in groups) / len(groups)
    assert zero_variance_share(values, ids) == pytest.approx(expected)


def test_shaping_keeps_groups_alive_that_the_outcome_shows_are_hopeless():
    shaper = build_shaper({"terms": [scripted_term("partial", 1.0), {"kind": "outcome", "weight": 1.0}]})
    batch = [shaper.shape(scripted_episode({"partial": p}, outcome=0.0)) for p in (0.1, 0.4, 0.2, 0.9)]
    metrics = RewardMonitor().update(batch, groups=[0, 0, 1, 1])
    assert metrics["reward/zero_variance_groups"] == 0.0  # the shaped totals differ within each group
    assert metrics["reward/zero_variance_groups_outcome"] == 1.0  # yet no group has a solved rollout


def test_drift_is_the_batch_mean_against_the_running_mean_of_past_batches():
    shaper = build_shaper({"terms": [scripted_term("fmt", 0.2), scripted_term("judge", 0.8)]})
    monitor = RewardMonitor(smoothing=0.5)

    def batch(fmt, judge):
        return [shaper.shape(scripted_episode({"fmt": f, "judge": j})) for f, j in zip(fmt, judge)]

    first = monitor.update(batch([0.0, 1.0], [0.5, None]))
    assert first["reward/fmt/mean"] == 0.5 and first["reward/fmt/drift"] == 0.0
    assert first["reward/judge/abstain_rate"] == 0.5 and first["reward/judge/mean"] == 0.5
    second = monitor.update(batch([1.0, 1.0], [None, None]))
    assert second["reward/fmt/drift"] == pytest.approx(0.5)  # climbing format term
    assert math.isnan(second["reward/judge/mean"]) and "reward/judge/drift" not in second
    third = monitor.update([b.to_dict() for b in batch([1.0, 1.0], [0.5, 0.5])])  # info["reward"] dicts work too
    assert third["reward/fmt/drift"] == pytest.approx(0.25)  # baseline 0.75 after two batches


def test_groups_must_match_the_batch():
    with pytest.raises(ConfigError, match="^groups="):
        zero_variance_share([1.0, 2.0], [0])
    with pytest.raises(ConfigError, match="^smoothing="):
        RewardMonitor(smoothing=1.0)
