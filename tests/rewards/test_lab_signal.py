"""The reward lab's group statistics on hand-built groups whose answers are known, and the rank correlations
against their definitions (and scipy, where it is installed)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.rewards import RewardBreakdown, TermValue
from agentgym.rewards.lab import group_metrics, group_stats, kendall, spearman
from agentgym.rewards.lab.ranks import average_ranks


def rows(group, totals, outcomes, breakdowns=None):
    return [(group, t, o, None if breakdowns is None else breakdowns[i]) for i, (t, o) in enumerate(zip(totals, outcomes))]


def test_zero_variance_groups_are_counted_and_split_by_outcome():
    batch = [*rows("all-fail", [0.2, 0.2, 0.2], [0, 0, 0]), *rows("all-pass", [5, 5], [1, 1]),
             *rows("flat-but-mixed", [1, 1], [0, 1]), *rows("varied", [0, 1], [0, 1]), *rows("alone", [3], [1])]
    stats = group_stats(batch)
    assert (stats.groups, stats.singletons, stats.rollouts) == (4, 1, 10)
    assert (stats.zero_var, stats.zero_var_all_fail, stats.zero_var_all_pass) == (0.75, 0.25, 0.25)
    assert stats.pass_rate == pytest.approx(5 / 10) and stats.mean_total == pytest.approx(16.6 / 10)


def test_within_group_std_and_advantage_follow_grpo_normalisation():
    stats = group_stats(rows("g", [1.0, 3.0], [0, 1]) + rows("h", [2.0, 2.0, 2.0], [0, 0, 0]))
    # verl: torch.std (Bessel-corrected) -> sqrt(2); advantages (r - 2) / (sqrt(2) + 1e-6) = -/+ 0.7071
    assert stats.within_std == pytest.approx((math.sqrt(2) + 0.0) / 2)
    assert stats.mean_abs_adv == pytest.approx(2 * (1 / (math.sqrt(2) + 1e-6)) / 5)


def test_rank_correlation_is_taken_only_where_the_outcome_and_the_total_vary():
    honest = rows("a", [3, 2, 1, 0], [1, 1, 0, 0])
    inverted = rows("b", [0, 1], [1, 0])
    no_outcome_spread = rows("c", [0, 1, 2], [0, 0, 0])
    stats = group_stats(honest + inverted + no_outcome_spread)
    assert stats.ranked_groups == 2
    assert stats.spearman == pytest.approx((spearman([3, 2, 1, 0], [1, 1, 0, 0]) - 1.0) / 2)
    assert stats.kendall == pytest.approx((math.sqrt(2 / 3) - 1.0) / 2)  # tau-b of the first group: 4/sqrt(24)


def test_inversions_count_pairs_whose_better_outcome_is_paid_less_and_keep_the_worst():
    batch = [("g", 0.2, 1.0, None, 4, "train-0"), ("g", 0.5, 0.0, None, 7, "train-0"), ("g", 0.2, 0.0, None, 1, "train-0"),
             ("h", 3.0, 1.0, None, 0, "train-1"), ("h", 0.1, 0.0, None, 1, "train-1")]
    stats = group_stats(batch, worst=1)
    assert (stats.pairs, stats.inversions, stats.ties) == (3, 1, 1)
    worst = stats.worst[0]
    assert (worst.task_id, worst.better_sample, worst.worse_sample) == ("train-0", 4, 7)
    assert worst.gap == pytest.approx(0.3)
    assert stats.metrics()["inversions"] == pytest.approx(1 / 3)


def _breakdown(total, outcome, **terms):
    values = {name: TermValue(*value) if isinstance(value, tuple) else TermValue(value, 1.0, value)
              for name, value in terms.items()}
    return RewardBreakdown(total, outcome, values)


def test_a_dead_judge_is_flagged_as_failed_and_partial_abstention_loudly():
    dead = TermValue(None, 0.8, 0.0, True, "judge unreachable: connection refused", "judge_unreachable")
    batch = [("g", 0.2, 1.0, _breakdown(0.2, 1.0, format=(1.0, 0.2, 0.2), llm_judge=dead)),
             ("g", 0.2, 0.0, _breakdown(0.2, 0.0, format=(1.0, 0.2, 0.2), llm_judge=dead)),
             ("g", 0.0, 0.0, _breakdown(0.0, 0.0, format=(0.0, 0.2, 0.0), llm_judge=dead))]
    stats = group_stats(batch)
    assert stats.failed == 1.0 and stats.partial_abstention == 1.0
    judge = stats.terms["llm_judge"]
    assert (judge.abstained, judge.failed, judge.failures) == (1.0, 1.0, {"judge_unreachable": 3})
    warnings = stats.warnings()
    assert warnings[0].startswith("FAILED: term 'llm_judge' could not score 100% of rollouts (judge_unreachable x3)")
    metrics = group_metrics(batch)
    assert metrics["agentgym/reward/failed/llm_judge"] == 1.0 and metrics["agentgym/reward/abstained/format"] == 0.0


def test_a_term_that_abstains_while_others_score_is_a_partial_abstention_warning():
    skip = TermValue(None, 1.0, 0.0, True, "no tool calls were attempted")
    batch = [("g", 1.0, 1.0, _breakdown(1.0, 1.0, format=1.0, tool_call_validity=skip)),
             ("g", 0.0, 0.0, _breakdown(0.0, 0.0, format=0.0, tool_call_validity=0.0))]
    stats = group_stats(batch)
    assert stats.terms["tool_call_validity"].partial == 0.5 and stats.failed == 0.0
    assert stats.warnings() == ["PARTIAL ABSTENTION: term 'tool_call_validity' abstained in 50% of rollouts while other "
                                "terms scored (no tool calls were attempted): those totals lack it"]


def test_per_term_contribution_and_within_group_variance():
    batch = [("g", 1.5, 1.0, _breakdown(1.5, 1.0, a=1.0, b=0.5)), ("g", 0.5, 0.0, _breakdown(0.5, 0.0, a=0.0, b=0.5)),
             ("h", 1.5, 1.0, _breakdown(1.5, 1.0, a=1.0, b=0.5)), ("h", 0.5, 0.0, _breakdown(0.5, 0.0, a=0.0, b=0.5))]
    stats = group_stats(batch)
    assert stats.terms["a"].contribution == 0.5 and stats.terms["a"].term_var == pytest.approx(0.5)
    assert stats.terms["b"].contribution == 0.5 and stats.terms["b"].term_var == 0.0


def test_group_metrics_is_a_flat_dict_of_floats_under_one_namespace_and_reads_breakdown_dicts():
    info = _breakdown(1.0, 1.0, format=1.0).to_dict()
    metrics = group_metrics([("u1", 1.0, 1.0, info), ("u1", 0.0, 0.0, None)], prefix="agentgym/reward")
    assert all(k.startswith("agentgym/reward/") and isinstance(v, float) for k, v in metrics.items())
    assert {"agentgym/reward/zero_var", "agentgym/reward/within_std", "agentgym/reward/spearman",
            "agentgym/reward/kendall", "agentgym/reward/abstained/format"} <= metrics.keys()
    assert math.isnan(group_metrics([("u1", 1.0, 1.0, None)])["agentgym/reward/zero_var"])  # no group of two


# -- the rank correlations -------------------------------------------------------------------------
def test_the_rank_correlations_give_scipy_s_documented_values_with_ties():
    # scipy.stats.spearmanr and kendalltau's documented examples (both have ties)
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(0.8207826816681233)
    assert kendall([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) == pytest.approx(-0.47140452079103173)
    assert average_ranks([10, 20, 10, 30]) == [1.5, 3.0, 1.5, 4.0]
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3])) and math.isnan(kendall([1, 2], [3, 3]))


def _tau_b_by_definition(x, y):
    n = len(x)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    sign = lambda v: (v > 0) - (v < 0)  # noqa: E731
    s = sum(sign(x[i] - x[j]) * sign(y[i] - y[j]) for i, j in pairs)
    n1 = sum(x[i] == x[j] for i, j in pairs)
    n2 = sum(y[i] == y[j] for i, j in pairs)
    d = math.sqrt((len(pairs) - n1) * (len(pairs) - n2))
    return s / d if d else math.nan


_small = st.lists(st.integers(0, 4), min_size=2, max_size=9)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), x=_small)
def test_kendall_is_tau_b_by_its_definition(data, x):
    y = data.draw(st.lists(st.integers(0, 3), min_size=len(x), max_size=len(x)))
    expected = _tau_b_by_definition(x, y)
    assert kendall(x, y) == pytest.approx(expected, nan_ok=True)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), x=_small)
def test_spearman_is_pearson_on_average_ranks_and_bounded(data, x):
    y = data.draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=len(x), max_size=len(x)))
    rho = spearman(x, y)
    assert math.isnan(rho) or -1.0 <= rho <= 1.0
    assert spearman(x, x) == pytest.approx(1.0) or len(set(x)) == 1


@settings(max_examples=100, deadline=None)
@given(data=st.data(), x=_small)
def test_the_rank_correlations_match_scipy(data, x):
    stats = pytest.importorskip("scipy.stats", reason="scipy is not installed in this venv (not a dependency)")
    y = data.draw(st.lists(st.integers(0, 3), min_size=len(x), max_size=len(x)))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant input
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, nan_ok=True)
        assert kendall(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, nan_ok=True)
