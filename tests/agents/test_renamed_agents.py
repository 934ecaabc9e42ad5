"""Scripted agents' old names (``oracle``, ``reference``) still work for one release, with a warning."""

from __future__ import annotations

import importlib
import sys

import gymnasium
import pytest

import agentgym  # noqa: F401  (registers the envs)
import agentgym.agents as agents
import agentgym.agents.stub as stub
import agentgym.envs.travelplanner as travelplanner
from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.agents import SolverAgent, run_episode
from agentgym.envs.travelplanner.scripted import gold_plan_actions, solver_actions


def test_the_gold_agent_by_its_old_name_warns_and_still_passes():
    env = gymnasium.make("TravelPlanner-v0", action_format="json")
    with pytest.warns(AgentGymDeprecationWarning, match="travelplanner_gold_agent"):
        factory = agents.travelplanner_reference_agent
    assert factory is agents.travelplanner_gold_agent
    assert run_episode(env, factory(env), options={"query_index": 0}).total_reward == 1.0


def test_the_gold_plan_actions_by_their_old_name_warn():
    with pytest.warns(AgentGymDeprecationWarning, match="gold_plan_actions"):
        assert travelplanner.reference_plan_actions is gold_plan_actions
    with pytest.warns(AgentGymDeprecationWarning, match="travelplanner_gold_scripts"):
        assert stub.travelplanner_reference_scripts is stub.travelplanner_gold_scripts


@pytest.mark.parametrize("old, new", [("OracleAgent", SolverAgent), ("oracle_actions", solver_actions),
                                      ("reference_plan_actions", gold_plan_actions)])
def test_the_old_oracle_module_serves_the_renamed_names_with_a_warning(old, new):
    sys.modules.pop("agentgym.envs.travelplanner.oracle", None)
    oracle = importlib.import_module("agentgym.envs.travelplanner.oracle")
    with pytest.warns(AgentGymDeprecationWarning, match=new.__name__):
        assert getattr(oracle, old) is new


def test_the_solver_agent_is_reached_from_the_envs_front_by_its_old_name():
    with pytest.warns(AgentGymDeprecationWarning, match="SolverAgent"):
        assert travelplanner.OracleAgent is SolverAgent
