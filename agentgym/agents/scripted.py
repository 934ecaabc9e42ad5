"""Scripted agents, which play without a model: ``agentgym run ENV --agent solver|gold|first-listing|top-title``.

    env = gymnasium.make("TravelPlanner-v0", action_format="json")
    log = run_episode(env, SolverAgent(env), seed=0)              # the exact solver's plan: an upper bound
    log = run_episode(env, travelplanner_gold_agent(env), seed=0)  # replays the task's annotated plan

``SolverAgent`` and ``travelplanner_gold_agent`` play TravelPlanner's scripted actions
(``agentgym.envs.travelplanner.scripted``); ``FirstListingAgent`` and ``TopTitleAgent`` are
deliberately weak baselines. Each factory takes the env (``factory(env) -> Agent``), as
``agentgym run --agent module:factory`` does.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentgym.agents.base import ReplayAgent
from agentgym.envs.travelplanner.scripted import give_up, gold_plan_actions, solver_actions
from agentgym.envs.travelplanner.solver import solve
from agentgym.errors import ConfigError, ResetNeeded

__all__ = ["SolverAgent", "FirstListingAgent", "TopTitleAgent", "solver_agent", "first_listing_agent",
           "top_title_agent", "travelplanner_gold_agent"]

_TITLE = re.compile(r"Doc 1\(Title: (.*?)\)")


class SolverAgent:
    """TravelPlanner's exact solver, played through the env: in tool-use mode the lookups its plan
    needs, then the plan (``solver_actions``), in both modes and both action formats. A task with
    no plan within its budget gets ``GiveUp``."""

    def __init__(self, env: Any, *, time_limit: float | None = 30.0) -> None:
        self.env = env.unwrapped if hasattr(env, "unwrapped") else env
        self.time_limit = time_limit
        self._queue: list[str] = []
        self._query: Any = None

    def reset(self) -> None:
        self._queue, self._query = [], None

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        query = self.env.query
        if query is None:
            raise ResetNeeded("reset the env before asking the solver agent for an action")
        if query is not self._query or (info or {}).get("turn") == 0:
            self._query = query
            self._queue = solver_actions(query, self.env.world, self.env.action_format,
                                         tools=self.env.mode == "tool-use", time_limit=self.time_limit)
        if not self._queue:  # the episode should be over; never leave the env without an action
            return give_up("nothing left to do", self.env.action_format)
        return self._queue.pop(0)


class FirstListingAgent(SolverAgent):
    """A deliberately weak planner: the solver's route and transport, but the first hotel and
    the first restaurant it sees in each city, for every night and every meal.

    It ignores minimum nights, house rules, room types, cuisines, budgets and meal diversity,
    so its failures show up constraint by constraint.
    """

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        action = super().act(observation, info)
        if action.startswith(("Finish[", "<answer>")):
            return self._weak_submission(action)
        return action

    def _weak_submission(self, action: str) -> str:
        result = solve(self.env.query, self.env.world, must_pass="both", time_limit=self.time_limit)
        plan = [self._first_listings(day) for day in result.plan]
        text = json.dumps(plan, ensure_ascii=False)
        return f"Finish[{text}]" if action.startswith("Finish[") else f"<answer>{text}</answer>"

    def _first_listings(self, day: dict[str, Any]) -> dict[str, Any]:
        world, out = self.env.world, dict(day)
        for key, table in (("breakfast", world.restaurants), ("lunch", world.restaurants),
                           ("dinner", world.restaurants), ("accommodation", world.accommodations)):
            value = str(day.get(key, "-"))
            if value in ("", "-") or ", " not in value:
                continue
            city = value.rsplit(", ", 1)[1]
            rows = table(city.split("(")[0])
            if rows:
                out[key] = f"{rows[0].name}, {city}"
        return out


class TopTitleAgent:
    """Searches the question once and answers with the title of the top passage."""

    def __init__(self) -> None:
        self._searched = False

    def reset(self) -> None:
        self._searched = False

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info.get("turn") == 0:
            self._searched = False
        if not self._searched:
            self._searched = True
            return f"<search>{info['extra'].get('question', '')}</search>"
        match = _TITLE.search(observation)
        return f"<answer>{match.group(1) if match else 'unknown'}</answer>"


def solver_agent(env: Any) -> SolverAgent:
    """The exact solver's plan, after the lookups it needs: an upper bound (needs a local env)."""
    return SolverAgent(_local_travelplanner(env, "solver"))


def first_listing_agent(env: Any) -> FirstListingAgent:
    """The weak TravelPlanner baseline (needs a local env)."""
    return FirstListingAgent(_local_travelplanner(env, "first-listing"))


def top_title_agent(env: Any) -> TopTitleAgent:
    """The search-QA heuristic: one search, answer with the top passage's title."""
    return TopTitleAgent()


def travelplanner_gold_agent(env: Any) -> ReplayAgent:
    """Replays each episode's gold (annotated) plan: the lookups it needs, then the plan itself.

    ``env`` must be a local TravelPlanner env: the agent reads the episode's task from it, after
    each reset, which is where the runner and ``play_episode`` call ``agent.reset()``.
    """
    unwrapped = _local_travelplanner(env, "gold")

    def script(observation: str, info: dict[str, Any]) -> list[str]:
        return gold_plan_actions(unwrapped.query, unwrapped.action_format, tools=unwrapped.mode == "tool-use")

    return ReplayAgent(script, fallback="GiveUp[the gold plan is exhausted]")


def _local_travelplanner(env: Any, agent: str) -> Any:
    from agentgym.envs.travelplanner.env import TravelPlannerEnv

    unwrapped = getattr(env, "unwrapped", None)
    if not isinstance(unwrapped, TravelPlannerEnv):
        raise ConfigError("agent", agent, f"an agent for a local TravelPlanner-v0 env (the {agent} agent "
                          "reads the episode's task and world)")
    return unwrapped
