"""The solver is exact: its plans pass evaluation, its cost is the brute-force optimum, and
``infeasible`` means that no plan fits the budget."""

from __future__ import annotations

import random

import pytest
from _brute import brute_cheapest
from _micro import (
    ALL_CUISINES,
    HOME,
    STATE,
    random_query,
    write_micro_world,
    write_spill_world,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym.envs.travelplanner.world.index import index_for
from agentgym.envs.travelplanner.evaluation._strict_hard import total_cost
from agentgym.envs.travelplanner.evaluation._strict_plan import read_plan
from agentgym.envs.travelplanner.evaluation import evaluate
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.solver import solve
from agentgym.envs.travelplanner.world import World

MICRO = settings(max_examples=30, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def assert_passes(result, query: TravelTask, world: World, evaluations=("strict", "official")) -> None:
    assert result.status == "solved" and result.plan is not None
    assert len(result.plan) == query.days
    for evaluation in evaluations:
        report = evaluate(result.plan, query, world, evaluator=evaluation)
        assert report.final_pass, (evaluation, report.failures())
    ix = index_for(world)
    assert total_cost(query, read_plan(query, result.plan, ix), ix) == pytest.approx(result.cost)
    assert result.cost <= query.budget


@MICRO
@given(seed=st.integers(0, 2**32 - 1))
def test_the_optimum_equals_the_brute_force_on_micro_worlds(tmp_path_factory, seed):
    rnd = random.Random(seed)
    world = World.open(write_micro_world(tmp_path_factory.mktemp("micro"), rnd))
    for _ in range(3):
        query = TravelTask.from_row(random_query(rnd), id="micro")
        best = brute_cheapest(query, world)
        for must_pass in ("strict", "both"):
            result = solve(query, world, must_pass=must_pass, ignore_budget=True, time_limit=None)
            if best == float("inf"):
                assert result.status == "infeasible", result
                continue
            assert result.optimal and result.cost == pytest.approx(best)
            priced = query.model_copy(update={"budget": int(result.cost)})
            assert_passes(result, priced, world, ("strict", "official") if must_pass == "both" else ("strict",))


@MICRO
@given(seed=st.integers(0, 2**32 - 1))
def test_the_budget_is_honoured_to_the_dollar(tmp_path_factory, seed):
    rnd = random.Random(seed)
    world = World.open(write_micro_world(tmp_path_factory.mktemp("micro"), rnd))
    query = TravelTask.from_row(random_query(rnd), id="micro")
    cheapest = solve(query, world, ignore_budget=True)
    if not cheapest.solved:
        assert solve(query, world).status == "infeasible"
        return
    at = query.model_copy(update={"budget": int(cheapest.cost)})
    result = solve(at, world)
    assert result.status == "solved" and result.cost == cheapest.cost
    assert_passes(result, at, world, ("strict",))
    below = query.model_copy(update={"budget": int(cheapest.cost) - 1})
    refused = solve(below, world)
    assert refused.status == "infeasible" and "budget" in refused.reason and refused.plan is None


def test_generated_queries_of_the_tiny_world_match_the_brute_force(tiny_world):
    world, queries = tiny_world
    for query in queries[:6] + queries[-3:]:  # every level; the 7-day cuisine ones are slow to brute-force
        result = solve(query, world, ignore_budget=True)
        assert result.optimal and result.cost == pytest.approx(brute_cheapest(query, world))
        assert_passes(result, query, world)


@pytest.mark.parametrize("cuisines", [7, 4, 2])
def test_extra_meals_fill_travel_days_and_spill_onto_the_next(tmp_path, cuisines):
    world = World.open(write_spill_world(tmp_path))
    query = TravelTask.from_row({
        "org": HOME, "dest": STATE, "days": 7, "visiting_city_number": 3,
        "date": [f"2022-03-0{i + 1}" for i in range(7)],
        "people_number": 2, "local_constraint": {"cuisine": list(ALL_CUISINES[:cuisines])}, "budget": 100_000,
        "query": "", "level": "hard"})
    result = solve(query, world, must_pass="both")
    assert result.optimal and result.cost == brute_cheapest(query, world)
    assert_passes(result, query, world)
    travel_meals = [sum(d[m] != "-" for m in ("breakfast", "lunch", "dinner"))
                    for d in result.plan if d["current_city"].startswith("from ")]
    assert sum(travel_meals) == cuisines  # Alder and Birch only host meals on travel days
    if cuisines == 7:
        assert travel_meals[:3] == [3, 3, 1]  # Alder's fourth meal shares Birch's arrival day

