"""Generated queries: feasible by construction for both evaluators, at the official level
mix, deterministic under a seed, and the source of the embedded world's bundled queries."""

from __future__ import annotations

import ast
import random
from collections import Counter

import pytest
from _micro import write_micro_world
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym.envs.travelplanner.evaluation import evaluate
from agentgym.envs.travelplanner.generator import (
    TASK_FIELDS,
    GeneratorConfig,
    TaskGenerator,
    generate_tasks,
)
from agentgym.envs.travelplanner.tasks import (
    CUISINES,
    HOUSE_RULES,
    ROOM_TYPES,
    TravelTask,
    load_tasks,
)
from agentgym.envs.travelplanner.solver import solve
from agentgym.envs.travelplanner.synthetic import generate_world
from agentgym.envs.travelplanner.synthetic import default_world_path
from agentgym.envs.travelplanner.world import World
from agentgym.errors import ConfigError, DataError

GROUPS = [(level, days) for level in ("easy", "medium", "hard") for days in (3, 5, 7)]


@pytest.fixture(scope="module")
def embedded() -> World:
    return World.open(default_world_path())


@pytest.fixture(scope="module")
def many(embedded):
    return generate_tasks(embedded, per_group=30, seed=11)


def check_row(row: dict, world: World, slack_max: float = 0.4) -> TravelTask:
    """Fields, level rules and the reference plan passing both evaluators within the budget."""
    assert tuple(row) == TASK_FIELDS and row["reference_information"] == ""
    q = TravelTask.from_row(row, id="generated")
    lc = ast.literal_eval(row["local_constraint"])
    meta, plan = ast.literal_eval(row["annotated_plan"])
    assert meta == {**{k: row[k] for k in TASK_FIELDS[:10]}, "date": list(q.date), "local_constraint": lc}
    assert len(plan) == 7 and all(d == {} for d in plan[q.days:])
    assert q.visiting_city_number == {3: 1, 5: 2, 7: 3}[q.days] and len(q.date) == q.days
    local = {k for k in ("house rule", "cuisine", "room type") if lc[k] is not None}
    if q.level == "easy":
        assert q.people_number == 1 and not local and lc["transportation"] is None
    elif q.level == "medium":
        assert 2 <= q.people_number <= 8 and len(local) == 1 and lc["transportation"] is None
    else:
        assert 2 <= q.people_number <= 8 and len(local) + (lc["transportation"] is not None) == 3
    assert lc["house rule"] in (None, *HOUSE_RULES) and lc["room type"] in (None, *ROOM_TYPES)
    assert lc["cuisine"] is None or set(lc["cuisine"]) <= set(CUISINES)
    for evaluation in ("strict", "official"):
        report = evaluate(list(q.annotated_plan), q, world, evaluator=evaluation)
        assert report.final_pass, (evaluation, report.failures())
    assert q.budget % 100 == 0 and q.org in q.text and q.dest in q.text and f"${q.budget:,}" in q.text
    return q


def test_hundreds_of_generated_queries_pass_both_modes(many, embedded):
    assert [(r["level"], r["days"]) for r in many] == [g for g in GROUPS for _ in range(30)]
    queries = [check_row(r, embedded) for r in many]
    hard = [q for q in queries if q.level == "hard"]
    assert all(q.local_constraint.transportation is not None for q in hard)  # default share 1.0
    assert len({q.text for q in queries}) == len(queries)
    assert len({(q.org, q.dest, q.date, q.people_number) for q in queries}) == len(queries)


def test_budgets_come_from_the_cheapest_plan(many, embedded):
    for row in many[::17]:
        q = TravelTask.from_row(row)
        cheapest = solve(q, embedded, must_pass="both", ignore_budget=True)
        assert cheapest.plan == list(q.annotated_plan)
        assert cheapest.cost <= q.budget <= cheapest.cost * 1.4 + 100


def test_the_mix_of_phrasings_and_transport(many):
    starts = Counter(r["query"].split()[0] for r in many)
    assert len(starts) >= 6  # several templates
    modes = Counter(d["transportation"].split(",")[0].split(":")[0]
                    for r in many for d in ast.literal_eval(r["annotated_plan"])[1] if d and d["transportation"] != "-")
    assert {"Flight Number", "Self-driving", "Taxi"} <= set(modes)


def test_the_same_seed_gives_the_same_queries(embedded):
    a = generate_tasks(embedded, 12, seed=3)
    assert a == generate_tasks(embedded, 12, seed=3)
    assert a != generate_tasks(embedded, 12, seed=4)
    counts = Counter((r["level"], r["days"]) for r in a)
    assert [counts[g] for g in GROUPS] == [2, 2, 2, 1, 1, 1, 1, 1, 1]


def test_the_bundled_queries_come_from_the_generator(embedded):
    for split in ("train", "validation", "test"):
        for q in load_tasks(split, world_root=embedded.root)[::23]:
            assert solve(q, embedded, must_pass="both", ignore_budget=True).plan == list(q.annotated_plan)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(world_seed=st.integers(0, 2**32 - 1), seed=st.integers(0, 2**32 - 1))
def test_any_seed_on_any_tiny_world_gives_passing_queries(tmp_path_factory, world_seed, seed):
    world = World.open(generate_world(tmp_path_factory.mktemp("tiny"), seed=world_seed, scale="tiny"))
    config = GeneratorConfig(budget_slack_min=0.0, budget_slack_max=0.0, hard_transport_share=0.5)
    for row in generate_tasks(world, per_group=1, seed=seed, config=config):
        q = check_row(row, world)
        assert q.budget - 100 < solve(q, world, must_pass="both").cost <= q.budget


def test_a_world_without_roads_or_flights_is_too_sparse(tmp_path):
    root = write_micro_world(tmp_path, random.Random(1))
    for rel, header in (("flights/clean_Flights_2022.csv", "Flight Number,Price,DepTime,ArrTime,ActualElapsedTime,"
                         "FlightDate,OriginCityName,DestCityName,Distance"),
                        ("googleDistanceMatrix/distance.csv", "origin,destination,cost,duration,distance")):
        (root / "database" / rel).write_text(header + "\n")
    gen = TaskGenerator(World.open(root), config=GeneratorConfig(max_attempts=20))
    with pytest.raises(DataError, match="too sparse"):
        gen.task("easy", 3)


@pytest.mark.parametrize("kwargs, field", [
    ({"n": 1, "config": GeneratorConfig(budget_slack_min=0.5, budget_slack_max=0.1)}, "budget_slack_min"),
    ({"n": 1, "config": GeneratorConfig(hard_transport_share=2.0)}, "hard_transport_share"),
    ({"n": 1, "config": GeneratorConfig(n_days=5)}, "n_days"),
    ({"n": 1, "seed": -1}, "seed"),
    ({"n": 3, "per_group": 1}, "n"),
    ({"n": -1}, "n"),
])
def test_bad_arguments_name_the_field(embedded, kwargs, field):
    with pytest.raises(ConfigError, match=rf"^{field}="):
        generate_tasks(embedded, **kwargs)


def test_an_unknown_group_is_refused(embedded):
    with pytest.raises(ConfigError, match="^group="):
        TaskGenerator(embedded).task("impossible", 3)
