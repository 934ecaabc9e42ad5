"""aggregate(): the official metrics and denominators; evaluate()'s API contract (tiny synthetic world)."""

from __future__ import annotations

import pytest

from agentgym.envs.travelplanner.evaluation import (
    COMMONSENSE, HARD, EvaluationReport, Verdict, aggregate, evaluate, hard_denominator,
)
from agentgym.envs.travelplanner.plan import parse_plan
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.errors import ConfigError

LC_NONE = {"house rule": None, "cuisine": None, "room type": None, "transportation": None}


def _q(level, days=3, **lc) -> TravelTask:
    return TravelTask.from_row({
        "org": "A", "dest": "B", "days": days, "visiting_city_number": 1, "date": ["2022-03-01"] * days,
        "people_number": 1, "budget": 100, "level": level, "local_constraint": {**LC_NONE, **lc}})


def _report(delivered=True, cs_fail=(), hard=None) -> EvaluationReport:
    cs = {k: Verdict(passed=(k not in cs_fail) if delivered else False, reason="r") for k in COMMONSENSE}
    hard_v = None if hard is None else {k: Verdict(passed=v, reason="r") for k, v in zip(HARD, hard)}
    c_ok = delivered and not cs_fail
    h_ok = hard_v is not None and all(v.passed is not False for v in hard_v.values())
    passed = sum(v.passed is True for v in cs.values())
    h_passed = sum(v.passed is True for v in (hard_v or {}).values())
    return EvaluationReport(evaluator="official", delivered=delivered, commonsense=cs, hard=hard_v,
                            commonsense_pass=c_ok, hard_pass=h_ok, final_pass=c_ok and h_ok,
                            commonsense_passed=passed, hard_passed=h_passed, hard_applicable=5,
                            commonsense_micro=passed / 8, hard_micro=h_passed / 5)


def test_hard_denominator_per_level():
    assert hard_denominator(_q("easy")) == 1
    assert hard_denominator(_q("easy", cuisine=["Chinese"])) == 1  # upstream ignores easy-level extras
    assert hard_denominator(_q("medium", **{"room type": "private room"})) == 2
    assert hard_denominator(_q("medium", transportation="no flight")) == 1  # not counted at medium
    assert hard_denominator(_q("hard", cuisine=["A"], transportation="no flight", **{"house rule": "pets"})) == 4
    assert hard_denominator(_q(None, transportation="no flight")) == 2  # no level: counted like hard


def test_aggregate_counts_like_upstream():
    queries = [_q("easy"), _q("easy", days=5), _q("medium", **{"house rule": "pets"}), _q("hard", days=7)]
    reports = [
        _report(hard=(True, None, None, None, None)),  # passes everything
        _report(cs_fail=("is_valid_restaurants",), hard=(False, None, None, None, None)),
        _report(cs_fail=("is_not_absent",)),  # hard gated off
        _report(delivered=False),
    ]
    m = aggregate(reports, queries)
    assert (m.n_tasks, m.delivered, m.commonsense_denominator, m.hard_denominator) == (4, 3, 32, 5)
    assert m.commonsense_passed == 8 + 7 + 7 and m.commonsense_micro == 22 / 32
    assert m.hard_passed == 1 and m.hard_micro == 1 / 5
    assert (m.commonsense_macro_count, m.hard_macro_count, m.final_pass_count) == (1, 1, 1)
    assert m.official()["Final Pass Rate"] == 0.25 and m.delivery_rate == 0.75
    assert list(m.by_level) == ["easy", "medium", "hard"] and list(m.by_days) == [3, 5, 7]
    assert m.by_level["easy"].n_tasks == 2 and m.by_level["easy"].final_pass_rate == 0.5
    assert m.by_level["medium"].hard_denominator == 2 and m.by_days[7].delivery_rate == 0.0
    with pytest.raises(ConfigError):
        aggregate(reports[:3], queries)


def test_evaluate_contract(tiny_world):
    world, queries = tiny_world
    q = queries[0]
    gold = list(q.annotated_plan)
    with pytest.raises(ConfigError):
        evaluate(gold, q, world, evaluator="lenient")
    by_dict = evaluate(gold, {**q.to_row(), "annotated_plan": None}, world)
    assert by_dict.final_pass
    assert evaluate(parse_plan(gold), q, world) == evaluate(gold, q, world)
    report = evaluate(None, q, world, evaluator="strict")
    assert not report.delivered and report.evaluator == "strict" and report.error
    assert EvaluationReport.model_validate(report.model_dump()) == report
    ok = evaluate(gold, q, world)
    assert ok.to_official() == {"delivered": True, "commonsense": {k: True for k in COMMONSENSE},
                                "hard": {k: ok.hard[k].passed for k in HARD}, "final_pass": True, "error": None}
    with pytest.raises(Exception):
        ok.final_pass = False  # frozen
