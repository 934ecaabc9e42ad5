"""TravelPlanner-v0 honours the Gymnasium contract and never crashes on model text."""

from __future__ import annotations

import math

import gymnasium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym
from agentgym import ActionTypeError, ConfigError, ResetNeeded, StepInfo

SCRIPT = [
    "CitySearch[Texas]",
    "Thought: flights first.\nAction 1: FlightSearch[Nowhere, Elsewhere, 2022-03-01]",
    "NotebookWrite[flights]",
    "GoogleDistanceMatrix[A, B, self-driving]",
    "FlightSearch[A, B, March 1]",
    "Bogus[1]",
    "",
]


@pytest.fixture(scope="module")
def env():
    return gymnasium.make("TravelPlanner-v0")



def test_flight_search_on_a_real_route_of_the_default_world(env):
    world = env.unwrapped.world
    query = env.unwrapped.tasks[0]
    leg = query.annotated_plan[0]["transportation"]
    assert leg  # the bundled queries come with reference plans
    env.reset(options={"task_index": 0})
    origin = query.org
    for city in world.cities:
        rows = world.flights(origin, city, query.date[0])
        if rows:
            obs, *_ , info = env.step(f"FlightSearch[{origin}, {city}, {query.date[0]}]")
            assert rows[0].number in obs and info["tool_result"]["n_rows"] == len(rows)
            return
    pytest.fail("no flight out of the origin on the first day")


BAD_ACTIONS = {
    "": "empty_action",
    "   ": "empty_action",
    "x" * 1_000_001: "action_too_long",
    "\x00\x01\x02 FlightSearch[\x07]": "unparseable_action",
    "FlightSearch[A, B": "unparseable_action",
    "Teleport[Paris]": "unknown_tool",
    "FlightSearch[A, B]": "wrong_arity",
    "FlightSearch[]": "wrong_arity",
    "FlightSearch[A, B, 2022-13-45x]": "invalid_argument",
    "FlightSearch['); DROP TABLE flights;--, X, 2022-03-01]": "invalid_argument",
    "RestaurantSearch[Atlantis]": "invalid_argument",
    "<answer>[{\"days\": 1}]": "unparseable_action",
}


@pytest.mark.parametrize("action", list(BAD_ACTIONS), ids=lambda a: repr(a[:30]))
def test_bad_actions_become_observations_with_an_error_code(env, action):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["error"]["code"] == BAD_ACTIONS[action]
    assert obs and len(obs.splitlines()) == 1 and reward == 0.0 and not terminated
    # state intact: the next valid action works
    obs, _, _, _, info = env.step("CitySearch[NoSuchState]")
    assert info["error"] is None and obs == "Invalid State"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300) | st.sampled_from(SCRIPT) | st.builds(lambda a, b: f"{a}[{b}]", st.sampled_from(
    ["FlightSearch", "CitySearch", "AccommodationSearch", "GoogleDistanceMatrix", "NotebookWrite", "Finish", "GiveUp"]),
    st.text(max_size=60)))
def test_any_text_action_is_safe(env, action):
    if getattr(env.unwrapped, "_done", True):
        env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space.contains(obs)
    assert math.isfinite(reward)
    StepInfo.from_info(info)
    if terminated or truncated:
        env.reset(seed=0)


def test_truncation_at_max_turns():
    env = gymnasium.make("TravelPlanner-v0", max_turns=3)
    env.reset(seed=0)
    results = [env.step("CitySearch[Texas]") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert results[-1][4]["terminated_reason"] == "max_turns"
    with pytest.raises(ResetNeeded):
        env.unwrapped.step("CitySearch[Texas]")


def test_programmer_errors_raise_from_the_error_tree():
    with pytest.raises(ConfigError, match="mode='fast'.*'tool-use'"):
        gymnasium.make("TravelPlanner-v0", mode="fast")
    with pytest.raises(ConfigError, match="action_format"):
        gymnasium.make("TravelPlanner-v0", action_format="xml")
    env = gymnasium.make("TravelPlanner-v0").unwrapped
    with pytest.raises(ConfigError, match="task_index"):
        env.reset(options={"task_index": 10_000})
    with pytest.raises(ConfigError, match="options"):
        env.reset(options={"colour": 1})
    with pytest.raises(ConfigError, match="task=1 .*TravelTask"):
        env.reset(options={"task": 1})
    env.reset(seed=0)
    with pytest.raises(ActionTypeError):
        env.step(42)
    with pytest.raises(agentgym.DataError, match="not a TravelPlanner world"):
        gymnasium.make("TravelPlanner-v0", database="/nonexistent")


def test_json_format_exposes_tool_schemas():
    env = gymnasium.make("TravelPlanner-v0", action_format="json")
    obs, _ = env.reset(seed=0)
    names = [s["function"]["name"] for s in env.unwrapped.tools.schemas()]
    assert "search_flights" in names and "<tools>" in obs and "search_flights" in obs
    obs, _, _, _, info = env.step('<tool_call>{"name": "search_cities", "arguments": {"state": "Nowhere"}}</tool_call>')
    assert obs == "Invalid State" and info["tool_call"]["name"] == "CitySearch"


def test_sole_planning_gives_reference_information_and_no_tools():
    env = gymnasium.make("TravelPlanner-v0", mode="sole-planning")
    obs, _ = env.reset(seed=0)
    assert "Given information:" in obs and "Accommodations in" in obs
    assert len(env.unwrapped.tools) == 0
    _, _, _, _, info = env.step("CitySearch[Texas]")
    assert info["error"]["code"] == "unknown_tool"


def _play_reference_plan(env, task_index):
    from agentgym.envs.travelplanner.scripted import gold_plan_actions

    env.reset(options={"task_index": task_index})
    unwrapped = env.unwrapped
    actions = gold_plan_actions(unwrapped.task, unwrapped.action_format,
                                     tools=unwrapped.mode == "tool-use")
    total = 0.0
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            break
    return total, terminated, info


@pytest.mark.parametrize("action_format", ["react", "json"])
@pytest.mark.parametrize("mode", ["tool-use", "sole-planning"])
def test_full_episodes_on_the_default_world(action_format, mode):
    env = gymnasium.make("TravelPlanner-v0", action_format=action_format, mode=mode, max_turns=60)
    levels = set()
    for i in range(0, len(env.unwrapped.tasks), 5):
        total, terminated, info = _play_reference_plan(env, i)
        assert terminated and info["terminated_reason"] == "answer", info["error"]
        assert info["report"]["final_pass"] and total == 1.0, info["report"]
        assert info["error"] is None
        levels.add(env.unwrapped.task.level)
    assert levels == {"easy", "medium", "hard"}


@pytest.mark.parametrize("action_format", ["react", "json"])
@pytest.mark.parametrize("mode", ["tool-use", "sole-planning"])
def test_full_episodes_on_the_real_database(real_travelplanner, action_format, mode):
    env = gymnasium.make("TravelPlanner-v0", database=real_travelplanner, action_format=action_format, mode=mode,
                         max_turns=60)
    for i in (0, 12, 40):
        total, terminated, info = _play_reference_plan(env, i)
        assert terminated and total == 1.0, info["report"]
        if mode == "tool-use":
            assert info["turn"] > 10  # the information was gathered through the tools


def test_an_unreadable_plan_ends_the_episode_as_not_delivered():
    env = gymnasium.make("TravelPlanner-v0")
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("Finish[this is not a plan]")
    assert terminated and reward == 0.0
    assert info["error"]["code"] == "invalid_plan" and not info["report"]["delivered"]
    assert "could not be read" in obs


def test_giving_up_ends_the_episode_with_zero_reward():
    env = gymnasium.make("TravelPlanner-v0")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("GiveUp[no flights]")
    assert terminated and reward == 0.0 and info["terminated_reason"] == "give_up"
