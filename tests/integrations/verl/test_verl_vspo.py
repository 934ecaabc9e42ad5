"""VSPO's math without verl: task values, eviction, value-proportional refill draws, copy numbering."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.integrations.verl.vspo import (
    GroupStats,
    VSPOConfig,
    copy_index,
    copy_uid,
    draw_copies,
    group_stats,
    plan_batch,
    smoothing_factor,
    task_value,
)


# -- task values and planning (pure) ---------------------------------------------------------
def test_task_value_by_hand():
    # mean .25, population std sqrt(.1875) = .4330; V = (1 - .25) * .4330
    assert task_value([1, 0, 0, 0], r_max=1.0) == pytest.approx(0.75 * math.sqrt(0.1875))
    assert task_value([1, 0, 0, 0], r_max=1.0, spread="var") == pytest.approx(0.75 * 0.1875)
    assert task_value([1, 1, 1], r_max=1.0) == 0.0  # all solved: nothing to learn
    assert task_value([0, 0, 0], r_max=1.0) == 0.0  # zero spread
    assert task_value([6.0, 2.0], r_max=6.0) == pytest.approx((6 - 4) * 2)  # shaped rewards, R_max 6


def test_zero_variance_groups_are_evicted_and_refilled_from_informative_ones():
    config = VSPOConfig()
    groups = [group_stats("a", [1, 0, 0, 0], 1.0, config), group_stats("b", [0, 0, 0, 0], 1.0, config),
              group_stats("c", [1, 1, 1, 0], 1.0, config), group_stats("d", [1, 1, 1, 1], 1.0, config)]
    plan = plan_batch(groups, 4, config, np.random.default_rng(0))
    assert plan.keep == ["a", "c"] and sorted(plan.drop) == ["b", "d"] and plan.evicted == 2
    assert len(plan.copies) == 2 and {uid for uid, _ in plan.copies} <= {"a", "c"}


def test_nothing_to_copy_keeps_the_zero_variance_groups():
    config = VSPOConfig()
    groups = [group_stats(u, [0, 0], 1.0, config) for u in "abc"]
    plan = plan_batch(groups, 2, config, np.random.default_rng(0))
    assert plan.keep == ["a", "b"] and plan.drop == ["c"] and plan.copies == [] and plan.evicted == 0


def test_copy_draws_are_proportional_to_value():
    values = [1.0, 2.0, 7.0]
    candidates = [GroupStats(u, 0.5, 0.5, v, 4) for u, v in zip("abc", values)]
    draws = 20_000
    copies = draw_copies(candidates, draws, np.random.default_rng(1234))
    counts = np.array([sum(1 for uid, _ in copies if uid == u) for u in "abc"])
    expected = draws * np.array(values) / sum(values)
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 13.82  # chi-square, 2 degrees of freedom, p = 0.001
    # Copy numbers count up per group from 1.
    numbers = [k for uid, k in copies if uid == "a"]
    assert numbers == list(range(1, len(numbers) + 1))


def test_seeded_draws_match_numpy_by_hand():
    candidates = [GroupStats("a", 0.5, 0.5, 1.0, 2), GroupStats("b", 0.5, 0.5, 3.0, 2)]
    picks = np.random.default_rng(7).choice(2, size=5, replace=True, p=[0.25, 0.75])
    expected_uids = ["ab"[i] for i in picks]
    assert [uid for uid, _ in draw_copies(candidates, 5, np.random.default_rng(7))] == expected_uids


def test_uniform_refill_ignores_values():
    candidates = [GroupStats("a", 0.5, 0.5, 0.001, 4), GroupStats("b", 0.5, 0.5, 1000.0, 4)]
    copies = draw_copies(candidates, 4000, np.random.default_rng(3), uniform=True)
    share = sum(1 for uid, _ in copies if uid == "a") / 4000
    assert 0.45 < share < 0.55


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=2, max_size=5), min_size=1, max_size=10),
       st.integers(min_value=1, max_value=10), st.integers(min_value=0, max_value=2**16))
def test_plan_always_fills_the_batch_from_informative_groups(rewards, batch_size, seed):
    config = VSPOConfig()
    groups = [group_stats(f"g{i}", r, 1.0, config) for i, r in enumerate(rewards)]
    plan = plan_batch(groups, batch_size, config, np.random.default_rng(seed))
    informative = {g.uid for g in groups if g.informative}
    assert set(plan.keep).isdisjoint(plan.drop) and set(plan.keep) | set(plan.drop) == {g.uid for g in groups}
    if informative:
        assert len(plan.keep) + len(plan.copies) == batch_size
        assert set(plan.keep) <= informative and {uid for uid, _ in plan.copies} <= set(plan.keep)
        assert len(set(plan.copies)) == len(plan.copies)
    else:
        assert len(plan.keep) == min(batch_size, len(groups)) and not plan.copies


def test_copy_uids_round_trip():
    assert copy_index("3f2a") == 0 and copy_index(copy_uid("3f2a", 4)) == 4
    assert smoothing_factor(0, 1.0) == 1.0 and smoothing_factor(3, 1.0) == 0.25
    with pytest.raises(ValueError):
        VSPOConfig.from_section({"smoothing": 1})



def test_both_typed_configs_read_each_shape_verl_hands_a_section_over_in():
    """A dict (sampler kwargs), an OmegaConf node with interpolations (driver, workers), an object
    with attributes (verl's dataclass configs), None (the defaults); a misspelt key is refused."""
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    from agentgym.integrations.verl.config import AgentGymConfig

    root = OmegaConf.create({"seed": 7, "algorithm": {"vspo": {"clip": 2.0, "seed": "${seed}"}},
                             "agentgym": {"max_turns": "${seed}"}})
    for vspo in ({"clip": 2.0, "seed": 7}, root.algorithm.vspo):
        read = VSPOConfig.from_section(vspo)
        assert (read.clip, read.seed) == (2.0, 7) and VSPOConfig.from_section(read) is read
    for trainer in ({"agentgym": {"max_turns": 7}}, root, SimpleNamespace(agentgym={"max_turns": 7})):
        assert AgentGymConfig.from_trainer_config(trainer).max_turns == 7
    assert AgentGymConfig.from_trainer_config(None) == AgentGymConfig() and VSPOConfig.from_section(None) == VSPOConfig()
    with pytest.raises(ValueError, match="max_turn"):
        AgentGymConfig.from_trainer_config({"agentgym": {"max_turn": 7}})
