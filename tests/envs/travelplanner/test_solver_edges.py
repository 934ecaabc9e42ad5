"""The solver's contract at the edges: statuses, reasons, limits, inputs and determinism."""

from __future__ import annotations

import json

import pytest

from agentgym.envs.travelplanner.evaluation import evaluate
from agentgym.envs.travelplanner.solver import STATUSES, SolveResult, solve
from agentgym.errors import ConfigError


@pytest.fixture(scope="module")
def tiny(tiny_world):
    return tiny_world


def _variant(query, **local):
    lc = query.local_constraint.model_copy(update=local)
    return query.model_copy(update={"local_constraint": lc})


def test_a_bad_must_pass_names_the_choices(tiny):
    world, queries = tiny
    with pytest.raises(ConfigError, match="must_pass=.official'.*strict.*both"):
        solve(queries[0], world, must_pass="official")


def test_rows_and_queries_give_the_same_plan(tiny):
    world, queries = tiny
    q = queries[4]
    row = {**q.to_row(), "annotated_plan": None}
    a, b = solve(q, world), solve(row, world)
    assert a.plan == b.plan and a.cost == b.cost and a.status == "solved"
    json.dumps(a.model_dump(mode="json"))  # results serialise


def test_the_same_query_gives_the_same_plan(tiny):
    world, queries = tiny
    for q in queries:
        assert solve(q, world).plan == solve(q, world).plan


@pytest.mark.parametrize("update, reason", [
    ({"org": "Atlantis"}, "not a city of the world"),
    ({"visiting_city_number": 0}, "at least one city"),
    ({"days": 1}, "cannot hold"),
    ({"people_number": 0}, "people_number"),
])
def test_impossible_shapes_are_infeasible_with_a_reason(tiny, update, reason):
    world, queries = tiny
    result = solve(queries[0].model_copy(update=update), world)
    assert result.status == "infeasible" and reason in result.reason and result.plan is None


def test_an_unknown_cuisine_or_a_scarce_room_type_is_proved_infeasible(tiny):
    world, queries = tiny
    q = queries[0]
    result = solve(_variant(q, cuisine=("Klingon",)), world)
    assert result.status == "infeasible" and "exhaustive" in result.reason
    assert result.stats.candidates == 1 and not result.stats.stopped


def test_a_budget_below_the_cheapest_plan_says_so(tiny):
    world, queries = tiny
    q = queries[8]
    cheapest = solve(q, world, ignore_budget=True)
    poor = q.model_copy(update={"budget": int(cheapest.cost * 0.5)})
    result = solve(poor, world)
    assert result.status == "infeasible" and "budget" in result.reason


def test_limits_stop_the_search_and_say_so(tiny):
    world, queries = tiny
    q = queries[-1]  # a hard 7-day query: several nodes
    stopped = solve(q, world, node_limit=1)
    assert stopped.stats.stopped and stopped.status in ("timeout", "solved")
    if stopped.solved:
        assert not stopped.optimal and evaluate(stopped.plan, q, world, evaluator="strict").final_pass
    assert solve(q, world, time_limit=0.0).stats.stopped or solve(q, world).stats.nodes < 256
    full = solve(q, world)
    assert full.optimal and not full.stats.stopped and full.stats.nodes >= 1 and full.stats.leaves >= 1


def test_statuses_and_result_fields(tiny):
    world, queries = tiny
    result = solve(queries[0], world)
    assert isinstance(result, SolveResult) and result.status in STATUSES and result.solved
    assert result.regime in ("self-driving", "flight/taxi") and len(result.route) == queries[0].visiting_city_number
    # A solved search priced at least one complete shape, over at least the cities its route visits.
    assert result.stats.leaves >= 1 and result.stats.leg_lookups >= 1 and not result.stats.stopped
    assert result.stats.candidates >= len(set(result.route))
