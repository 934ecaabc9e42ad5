"""The solver on the real TravelPlanner database (skipped without the shared data)."""

from __future__ import annotations

import gymnasium
import pytest

from agentgym.envs.travelplanner.world.index import index_for
from agentgym.envs.travelplanner.evaluation._strict_hard import total_cost
from agentgym.envs.travelplanner.evaluation._strict_plan import read_plan
from agentgym.envs.travelplanner.evaluation import evaluate
from agentgym.agents.scripted import SolverAgent
from agentgym.envs.travelplanner.solver import solve

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def solved_train(real_world, train_queries):
    return [solve(q, real_world, must_pass="both") for q in train_queries]


def test_every_train_query_is_solved_within_its_budget(real_world, train_queries, solved_train):
    ix = index_for(real_world)
    for q, result in zip(train_queries, solved_train, strict=True):
        assert result.status == "solved" and result.optimal, (q.id, result.reason)
        assert result.cost <= q.budget
        for evaluation in ("strict", "official"):
            report = evaluate(result.plan, q, real_world, evaluator=evaluation)
            assert report.final_pass, (q.id, evaluation, report.failures())
        gold = evaluate(list(q.annotated_plan), q, real_world, evaluator="strict")
        if gold.final_pass:  # a valid plan: the optimum cannot cost more
            assert result.cost <= total_cost(q, read_plan(q, list(q.annotated_plan), ix), ix)


def test_query_41_is_solved_although_its_gold_plan_fails_strict(real_world, train_queries, solved_train):
    q = train_queries[41]
    assert not evaluate(list(q.annotated_plan), q, real_world, evaluator="strict").final_pass
    assert evaluate(solved_train[41].plan, q, real_world, evaluator="strict").final_pass


def test_strict_mode_finds_the_same_optimum(real_world, train_queries, solved_train):
    for q, both in zip(train_queries, solved_train):
        strict = solve(q, real_world, must_pass="strict")
        assert strict.cost == both.cost
        assert evaluate(strict.plan, q, real_world, evaluator="strict").final_pass


def test_validation_queries_are_solved_or_proved_infeasible(real_world, validation_queries):
    for q in validation_queries:
        result = solve(q, real_world, must_pass="both")
        assert result.status in ("solved", "infeasible") and not result.stats.stopped, q.id
        if result.solved:
            assert evaluate(result.plan, q, real_world, evaluator="strict").final_pass
            continue
        cheapest = solve(q, real_world, must_pass="both", ignore_budget=True)
        assert not cheapest.solved or cheapest.cost > q.budget  # the proof is consistent


def test_the_oracle_plays_the_real_train_queries(real_travelplanner):
    env = gymnasium.make("TravelPlanner-v0", database=real_travelplanner, tasks="train", evaluator="official")
    agent = SolverAgent(env)
    for i in range(0, 45, 4):
        obs, info = env.reset(options={"task_index": i})
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            if terminated or truncated:
                break
        assert reward == 1.0 and info["report"]["final_pass"]
