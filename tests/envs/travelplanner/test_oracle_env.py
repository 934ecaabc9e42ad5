"""The solver agent plays TravelPlanner-v0 to a final pass through the env's own tools."""

from __future__ import annotations

import gymnasium
import pytest

import agentgym  # noqa: F401  (registers the env)
from agentgym.agents.scripted import SolverAgent
from agentgym.envs.travelplanner.generator import generate_tasks
from agentgym.envs.travelplanner.scripted import solver_actions
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.synthetic import default_world_path
from agentgym.envs.travelplanner.world import World


@pytest.fixture(scope="module")
def world() -> World:
    return World.open(default_world_path())


@pytest.fixture(scope="module")
def generated(world):
    return generate_tasks(world, per_group=2, seed=21)


def play(env, agent, **reset):
    obs, info = env.reset(**reset)
    steps = []
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        steps.append(info)
        if terminated or truncated:
            return reward, terminated, steps


@pytest.mark.parametrize("action_format", ["react", "json"])
@pytest.mark.parametrize("mode", ["tool-use", "sole-planning"])
@pytest.mark.parametrize("evaluation", ["strict", "official"])
def test_the_oracle_passes_every_generated_query(world, generated, action_format, mode, evaluation):
    env = gymnasium.make("TravelPlanner-v0", database=world, tasks=generated, mode=mode,
                         action_format=action_format, evaluator=evaluation)
    agent = SolverAgent(env)
    for i in range(len(generated)):
        reward, terminated, steps = play(env, agent, options={"task_index": i})
        assert terminated and reward == 1.0, steps[-1].get("report")
        assert steps[-1]["terminated_reason"] == "answer" and steps[-1]["report"]["final_pass"]
        tools = steps[:-1]
        assert all(s["action"] == "tool" and s["error"] is None for s in tools)
        if mode == "tool-use":
            called = {s["tool_call"]["name"] for s in tools}
            assert {"AttractionSearch", "RestaurantSearch", "AccommodationSearch", "NotebookWrite"} <= called
            assert called & {"FlightSearch", "GoogleDistanceMatrix"}
        else:
            assert not tools


def test_the_oracle_looks_up_what_its_plan_uses(world, generated):
    q = TravelTask.from_row(generated[-1], id="x")  # a hard 7-day trip
    actions = solver_actions(q, world, "react")
    plan_cities = {d["current_city"] for d in q.annotated_plan if not d["current_city"].startswith("from ")}
    for city in plan_cities:
        assert f"AccommodationSearch[{city}]" in actions and f"RestaurantSearch[{city}]" in actions
    assert actions[0] == f"CitySearch[{q.dest}]" and actions[-1].startswith("Finish[")
    assert len(actions) <= 30  # the env's default turn limit
    assert solver_actions(q, world, "json", tools=False)[0].startswith("<answer>")


def test_the_oracle_gives_up_when_nothing_fits_the_budget(world, generated):
    row = {**generated[0], "budget": 10}
    for fmt in ("react", "json"):
        env = gymnasium.make("TravelPlanner-v0", database=world, tasks=[row], action_format=fmt)
        reward, terminated, steps = play(env, SolverAgent(env), seed=0)
        assert terminated and reward == 0.0 and steps[-1]["terminated_reason"] == "give_up"


def test_the_oracle_replans_on_each_reset(world, generated):
    env = gymnasium.make("TravelPlanner-v0", database=world, tasks=generated)
    agent = SolverAgent(env)
    for i in (0, 0, 5):
        reward, _, _ = play(env, agent, options={"task_index": i})
        assert reward == 1.0
    with pytest.raises(RuntimeError, match="reset"):
        SolverAgent(gymnasium.make("TravelPlanner-v0", database=world, tasks=generated)).act("", {})
