"""Broken plans: each one derived from a gold train plan, failing exactly one constraint, with both evaluators."""

from __future__ import annotations

import copy

import pytest

from agentgym.envs.travelplanner.evaluation import COMMONSENSE, evaluate

pytestmark = pytest.mark.realdata

GATING = {"is_not_absent", "is_valid_information_in_sandbox"}


def _set(day: int, key: str, value):
    def change(plan):
        plan[day - 1][key] = value
    return change


def _drop(day: int, key: str):
    def change(plan):
        del plan[day - 1][key]
    return change


def _hotel(days: tuple[int, ...], value: str):
    def change(plan):
        for d in days:
            plan[d - 1]["accommodation"] = value
    return change


# name: (train query index, plan change, query field updates, the one constraint that fails)
CASES = {
    "route_outside_destination_state": (40, None, {"dest": "Texas"}, "is_reasonable_visiting_city"),
    "repeated_restaurant": (0, _set(3, "lunch", "Flying Mango, Rockford"), {}, "is_valid_restaurants"),
    "repeated_attraction": (0, _set(3, "attraction", "Burpee Museum of Natural History, Rockford;Sinnissippi Park, Rockford;"),
                            {}, "is_valid_attractions"),
    "minimum_nights": (0, _hotel((1, 2), "Midtown 2 Bed United Nations Loc, Full Kitchen, Rockford"), {},
                       "is_valid_accommodation"),
    "self_driving_and_taxi": (1, _set(3, "transportation", "Taxi, from Pensacola to Kansas City, duration: 13 hours 59 mins"),
                              {"budget": 5000}, "is_valid_transportation"),
    "meal_outside_travel_day_cities": (0, _set(1, "dinner", "Jalapenos, Houston"), {}, "is_valid_information_in_current_city"),
    "invented_restaurant": (0, _set(2, "lunch", "Totally Made Up Diner, Rockford"), {}, "is_valid_information_in_sandbox"),
    "missing_key": (0, _drop(2, "lunch"), {}, "is_not_absent"),
    "over_budget": (0, _hotel((1, 2), "Private rooms And Matchless Location, Rockford"), {}, "valid_cost"),
    "house_rule": (30, _hotel((1, 2), "TRANQUIL HAVEN W/PRIVATE BATH-8 MINS TO JFK RM.#1, Fayetteville"), {}, "valid_room_rule"),
    "cuisine": (30, _set(2, "dinner", "Beyond Food, Fayetteville"), {}, "valid_cuisine"),
    "room_type": (40, _hotel((5, 6), "Quaint & Charming 2BR + Futon, Denver(Colorado)"), {"budget": 30000}, "valid_room_type"),
    "no_self_driving": (30, lambda plan: (
        _set(1, "transportation", "Self-driving, from Houston to Fayetteville, duration: 16 hours 37 mins")(plan),
        _set(3, "transportation", "Self-driving, from Fayetteville to Houston, duration: 16 hours 41 mins")(plan)),
        {}, "valid_transportation"),
}


def _case(train_queries, name):
    index, change, updates, failing = CASES[name]
    q = train_queries[index]
    plan = copy.deepcopy([dict(d) for d in q.annotated_plan])
    if change is not None:
        change(plan)
    if updates:
        q = q.model_copy(update=updates)
    return q, plan, failing


@pytest.mark.parametrize("evaluation", ["official", "strict"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fails_exactly_one_constraint(real_world, train_queries, name, evaluation):
    q, plan, failing = _case(train_queries, name)
    report = evaluate(plan, q, real_world, evaluator=evaluation)
    assert report.delivered and report.error is None
    assert set(report.failures()) == {failing}, report.failures()
    assert report.failures()[failing]  # a one-line reason
    assert "\n" not in report.failures()[failing]
    assert not report.final_pass
    if failing in GATING:
        assert report.hard is None and not report.hard_pass and report.hard_micro == 0
    else:
        assert report.hard is not None
    if failing in COMMONSENSE:
        assert not report.commonsense_pass and report.commonsense_micro == 7 / 8
    else:
        assert report.commonsense_pass and not report.hard_pass
        assert report.hard_passed == report.hard_applicable - 1


def test_the_untouched_plans_pass(real_world, train_queries):
    for index in {c[0] for c in CASES.values()}:
        q = train_queries[index]
        for evaluation in ("official", "strict"):
            assert evaluate(list(q.annotated_plan), q, real_world, evaluator=evaluation).final_pass
