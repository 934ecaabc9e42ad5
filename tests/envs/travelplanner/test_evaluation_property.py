"""Property tests: random and mutated plans never make the evaluator raise, and every failure names
its constraint. Runs on a tiny synthetic world (no real data needed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym.envs.travelplanner import _plan_text as pt
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD, EvaluationReport, evaluate
from agentgym.envs.travelplanner.plan import PLAN_KEYS, parse_plan

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                               HealthCheck.too_slow])

fragments = st.sampled_from([
    "-", "", " ", "from A to B", "from ", " to ", "Flight Number: F0000001, from A to B", "flight number: F1",
    "Self-driving, from A to B", "Taxi", "self-driving", "Name, City", "Name, City(State)", "; ", ";", ",",
    "(", ")", "\n", "Coco", "You don't need to fill in the information for this or later days.", "É", "日本", "\x00",
])
texts = st.one_of(st.text(max_size=40), st.lists(fragments, max_size=8).map("".join),
                  st.builds(lambda s, n: s * n, fragments, st.integers(1, 3000)))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), texts)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                      max_leaves=6)
day_dicts = st.dictionaries(st.sampled_from(PLAN_KEYS + ("day", "extra")), st.one_of(texts, values), max_size=9)
days = st.one_of(day_dicts, values)
plans = st.one_of(
    st.lists(days, max_size=9),
    st.lists(day_dicts, min_size=1, max_size=9),
    values,
    st.lists(day_dicts, max_size=5).map(json.dumps),
    st.lists(day_dicts, max_size=5).map(lambda p: f"<answer>{json.dumps(p)}</answer>"),
    st.builds(lambda p, i: {"idx": i, "query": "q", "plan": p}, st.lists(day_dicts, max_size=5), st.integers()),
)


def check_report(report: EvaluationReport, evaluation: str) -> None:
    assert set(report.commonsense) == set(COMMONSENSE)
    assert report.hard is None or set(report.hard) == set(HARD)
    verdicts = {**report.commonsense, **(report.hard or {})}
    for name, v in verdicts.items():
        assert v.passed in (True, False, None)
        assert isinstance(v.reason, str) and v.reason and "\n" not in v.reason, name
        if v.reason.startswith("evaluation_error"):
            assert evaluation == "official" and v.passed is False
            assert report.error is not None
    failures = report.failures()
    assert set(failures) <= set(verdicts)
    assert all(failures.values())
    if report.error is not None and report.delivered:
        assert report.error.split(":")[0] in verdicts  # the error names its constraint
    if report.hard is not None:
        assert report.commonsense["is_not_absent"].passed and report.commonsense["is_valid_information_in_sandbox"].passed
    assert report.final_pass == (report.commonsense_pass and report.hard_pass)
    assert 0 <= report.commonsense_micro <= 1 and 0 <= report.hard_micro <= 1
    json.dumps(report.to_official())
    report.model_dump(mode="json")


@pytest.fixture(scope="module")
def world_and_query(tiny_world):
    world, queries = tiny_world
    return world, queries


@SETTINGS
@given(plan=plans, evaluation=st.sampled_from(["official", "strict"]), k=st.integers(0, 8))
def test_random_plans_never_raise(world_and_query, plan, evaluation, k):
    world, queries = world_and_query
    check_report(evaluate(plan, queries[k % len(queries)], world, evaluator=evaluation), evaluation)


def _mutate(plan: list, data) -> list:
    plan = [dict(d) for d in plan]
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.integers(0, 7))
        i = data.draw(st.integers(0, len(plan) - 1)) if plan else 0
        if not plan:
            break
        if kind == 0 and isinstance(plan[i], dict) and plan[i]:
            plan[i][data.draw(st.sampled_from(sorted(plan[i])))] = data.draw(st.one_of(values, texts))
        elif kind == 1 and isinstance(plan[i], dict) and plan[i]:
            del plan[i][data.draw(st.sampled_from(sorted(plan[i])))]
        elif kind == 2:
            plan[i] = data.draw(values)
        elif kind == 3:
            plan.insert(i, data.draw(days))
        elif kind == 4:
            del plan[i]
        elif kind == 5 and isinstance(plan[i], dict):
            plan[i] = {k: v.upper() if isinstance(v, str) else v for k, v in plan[i].items()}
        elif kind == 6 and isinstance(plan[i], dict):
            plan[i] = {k: v.replace(",", "") if isinstance(v, str) else v for k, v in plan[i].items()}
        elif kind == 7:
            plan = plan + plan
    return plan


@SETTINGS
@given(data=st.data(), evaluation=st.sampled_from(["official", "strict"]))
def test_mutated_gold_plans_never_raise(world_and_query, data, evaluation):
    world, queries = world_and_query
    q = data.draw(st.sampled_from(queries))
    plan = _mutate(list(q.annotated_plan), data)
    check_report(evaluate(plan, q, world, evaluator=evaluation), evaluation)


def test_gold_plans_of_the_tiny_world_pass(world_and_query):
    world, queries = world_and_query
    for q in queries:
        for evaluation in ("official", "strict"):
            assert evaluate(list(q.annotated_plan), q, world, evaluator=evaluation).final_pass


def test_huge_fields_stay_fast_and_safe(world_and_query):
    world, queries = world_and_query
    q = queries[0]
    huge = ["a," * 100_000, "from " * 50_000, "(" * 100_000, "x\n" * 50_000 + ",y", "Flight Number: " * 20_000]
    for text in huge:
        plan = [{key: text for key in PLAN_KEYS}] * q.days
        for evaluation in ("official", "strict"):
            check_report(evaluate(plan, q, world, evaluator=evaluation), evaluation)
    assert not parse_plan("[" * 100_000).delivered


# -- the linear-time official parsers equal the official patterns ------------------------------
alphabet = st.lists(st.sampled_from(list("fromt ,()\n\tAxB\xa0") + ["from", " to ", "to"]), max_size=16).map("".join)


@settings(max_examples=1500, deadline=None)
@given(text=alphabet)
def test_linear_parsers_equal_the_patterns(text):
    m = pt._FROM_TO.search(text)
    assert pt._from_to_linear(text) == ((m.group(1), m.group(2)) if m else (None, None))
    m = pt._PAREN.search(text)
    assert pt._before_paren_linear(text) == (m.group(1) if m else text)
    m = pt._NAME_CITY.search(text)
    expected = ("-", "-") if not m else (m.group(1).strip(), pt.before_paren(m.group(2).strip()).strip())
    assert pt._name_city_linear(text) == expected
