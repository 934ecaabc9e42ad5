"""Composition rules as properties: weighted sums, abstentions, gates, caps, clips, normalization."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reward_helpers import scripted_episode, scripted_term

from agentgym.errors import DataError
from agentgym.rewards import RewardBreakdown, build_shaper

weights = st.floats(0, 10, allow_nan=False, allow_infinity=False)
raws = st.one_of(st.none(), st.floats(-5, 5, allow_nan=False, allow_infinity=False))
unit_raws = st.floats(0, 1, allow_nan=False, allow_infinity=False)


def names(n):
    return [f"t{i}" for i in range(n)]


def shape(terms, values, **spec):
    return build_shaper({"terms": terms, **spec}).shape(scripted_episode(values))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(1, 6))
def test_total_is_linear_in_the_weights(data, n):
    w1 = data.draw(st.lists(weights, min_size=n, max_size=n))
    w2 = data.draw(st.lists(weights, min_size=n, max_size=n))
    a = data.draw(st.floats(0, 5, allow_nan=False))
    values = dict(zip(names(n), data.draw(st.lists(raws, min_size=n, max_size=n))))

    def total(ws):
        return shape([scripted_term(k, w) for k, w in zip(names(n), ws)], values).total

    expected = sum(w * v for w, v in zip(w1, values.values()) if v is not None)
    assert total(w1) == pytest.approx(expected, abs=1e-9)
    combined = [a * x + y for x, y in zip(w1, w2)]
    assert total(combined) == pytest.approx(a * total(w1) + total(w2), rel=1e-9, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(1, 6), normalize=st.sampled_from(["none", "weights"]))
def test_abstaining_terms_do_not_count(data, n, normalize):
    ws = data.draw(st.lists(weights, min_size=n, max_size=n))
    values = dict(zip(names(n), data.draw(st.lists(raws, min_size=n, max_size=n))))
    extra_weight = data.draw(weights)
    terms = [scripted_term(k, w) for k, w in zip(names(n), ws)]
    with_silent = shape([*terms, scripted_term("silent", extra_weight)], {**values, "silent": None},
                        normalize=normalize)
    without = shape(terms, values, normalize=normalize)
    assert with_silent.total == pytest.approx(without.total, abs=1e-12)
    silent = with_silent.terms["silent"]
    assert silent.abstained and silent.raw is None and silent.contribution == 0.0
    assert with_silent.abstained == [k for k, v in values.items() if v is None] + ["silent"]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(1, 5))
def test_gates_keep_the_total_within_the_ungated_bounds(data, n):
    ws = data.draw(st.lists(weights, min_size=n, max_size=n))
    values = dict(zip(names(n), data.draw(st.lists(unit_raws, min_size=n, max_size=n))))
    gate_value = data.draw(unit_raws)
    threshold = data.draw(unit_raws)
    gated = [scripted_term(k, w, gate={"term": "g", "at_least": threshold}) for k, w in zip(names(n), ws)]
    plain = [scripted_term(k, w) for k, w in zip(names(n), ws)]
    values_g = {**values, "g": gate_value}
    result = shape([scripted_term("g", 0.0), *gated], values_g)
    ungated = shape([scripted_term("g", 0.0), *plain], values_g)
    assert 0.0 <= result.total <= ungated.total + 1e-12 <= sum(ws) + 1e-9
    if gate_value >= threshold:
        assert result.total == pytest.approx(ungated.total)
    else:
        assert result.total == 0.0
        assert all(result.terms[k].reason.startswith("gated off: g = ") for k in names(n))
        assert all(not result.terms[k].abstained for k in names(n))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(1, 5))
def test_clip_bounds_the_total_and_cap_bounds_each_contribution(data, n):
    ws = data.draw(st.lists(weights, min_size=n, max_size=n))
    values = dict(zip(names(n), data.draw(st.lists(raws, min_size=n, max_size=n))))
    low = data.draw(st.floats(-10, 10, allow_nan=False))
    high = low + data.draw(st.floats(0.01, 10, allow_nan=False))
    cap = data.draw(st.floats(0.01, 5, allow_nan=False))
    penalties = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    terms = [scripted_term(k, w, cap=cap, penalty=p) for k, w, p in zip(names(n), ws, penalties)]
    result = shape(terms, values, clip=[low, high])
    assert low <= result.total <= high
    for (k, v), w, p in zip(values.items(), ws, penalties):
        term = result.terms[k]
        assert abs(term.contribution) <= cap + 1e-12
        if v is not None:
            assert term.contribution == pytest.approx(max(-cap, min(cap, (-1 if p else 1) * w * v)))


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(1, 6))
def test_weight_normalization_is_a_weighted_mean_over_terms_that_answered(data, n):
    ws = data.draw(st.lists(st.floats(0.01, 10), min_size=n, max_size=n))
    values = dict(zip(names(n), data.draw(st.lists(st.one_of(st.none(), unit_raws), min_size=n, max_size=n))))
    result = shape([scripted_term(k, w) for k, w in zip(names(n), ws)], values, normalize="weights")
    answered = [(w, v) for w, v in zip(ws, values.values()) if v is not None]
    expected = sum(w * v for w, v in answered) / sum(w for w, _ in answered) if answered else 0.0
    assert result.total == pytest.approx(expected)
    assert 0.0 <= result.total <= 1.0 + 1e-12


def test_a_term_gated_on_an_abstaining_term_is_off_and_not_computed():
    result = shape([scripted_term("g", 1.0), scripted_term("x", 1.0, gate={"term": "g"})], {"g": None, "x": 1.0})
    assert result.terms["x"].raw is None and result.terms["x"].contribution == 0.0
    assert "g has no value" in result.terms["x"].reason


def test_gates_chain_in_dependency_order_whatever_the_listing_order():
    terms = [scripted_term("c", 1.0, gate={"term": "b"}), scripted_term("b", 1.0, gate={"term": "a"}),
             scripted_term("a", 1.0)]
    assert shape(terms, {"a": 1.0, "b": 1.0, "c": 1.0}).total == 3.0
    off = shape(terms, {"a": 0.0, "b": 1.0, "c": 1.0})
    assert off.total == 0.0 and list(off.terms) == ["c", "b", "a"]  # breakdown keeps spec order
    assert off.terms["c"].reason == "gated off: b has no value (gated off: a = 0 < 1)"


def test_gate_on_the_outcome_pays_a_bonus_only_for_solved_tasks():
    spec = build_shaper({"terms": [scripted_term("bonus", 0.1, gate={"term": "outcome"}),
                                   {"kind": "outcome", "weight": 1.0}]})
    assert spec.shape(scripted_episode({"bonus": 1.0}, outcome=1.0)).total == pytest.approx(1.1)
    assert spec.shape(scripted_episode({"bonus": 1.0}, outcome=0.0)).total == 0.0


def test_outcome_is_always_reported_and_independent_of_the_shaped_terms():
    result = shape([scripted_term("x", 2.0)], {"x": 1.0})
    assert result.outcome == 0.0 and result.total == 2.0
    assert result.to_dict()["outcome"] == 0.0


def test_a_term_returning_nan_is_a_bug_not_a_zero():
    spec = {"terms": [{"kind": "custom", "function": "reward_fixture_terms:not_finite", "weight": 1.0}]}
    with pytest.raises(ValueError, match="not_finite.*nan"):
        build_shaper(spec).shape(scripted_episode({}))


def test_a_breakdown_reads_back_from_the_info_dict_it_was_written_to():
    shaper = build_shaper({"terms": [scripted_term("a", 1.0), scripted_term("b", 2.0, penalty=True)]})
    breakdown = shaper.shape(scripted_episode({"a": 1.0, "b": None}), training_step=3)
    read = RewardBreakdown.from_info({"turn": 1, "reward": breakdown.to_dict()})
    assert read == breakdown and read.all_abstained is False and read.abstained == ["b"]
    assert RewardBreakdown.from_info({"turn": 1}) is None  # an unshaped step


@pytest.mark.parametrize("bad", [{"total": 1.0}, {"total": "1", "outcome": 0.0, "terms": {}},
                                 {"total": 1.0, "outcome": 0.0, "terms": {"a": {"raw": 1.0}}}, [1, 2]])
def test_a_dict_that_is_not_a_breakdown_is_a_data_error(bad):
    with pytest.raises(DataError, match="not a reward breakdown"):
        RewardBreakdown.from_info({"reward": bad})


