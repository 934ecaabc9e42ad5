"""The demo's scripted agents: a weak TravelPlanner baseline and a search-QA heuristic."""

from __future__ import annotations

import re
from typing import Any

from agentgym.envs.travelplanner.oracle import OracleAgent
from agentgym.envs.travelplanner.solver import solve
from agentgym.errors import ConfigError

__all__ = ["PlayableOracle", "FirstListingAgent", "TopTitleAgent", "oracle_agent", "first_listing_agent",
           "top_title_agent"]

_TITLE = re.compile(r"Doc 1\(Title: (.*?)\)")


class PlayableOracle(OracleAgent):
    """The oracle with the ``Agent`` protocol's ``reset`` (the runner calls it before each episode)."""

    def reset(self) -> None:
        self._queue, self._query = [], None


class FirstListingAgent(PlayableOracle):
    """A deliberately weak planner: the oracle's route and transport, but the first hotel and
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
        import json

        result = solve(self.env.task, self.env.world, must_pass="both", time_limit=self.time_limit)
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


# Factories for ``agentgym run --agent oracle|first-listing|top-title``: factory(env) -> agent.

def oracle_agent(env: Any) -> PlayableOracle:
    """The exact solver's plan, after the lookups it needs: an upper bound (needs a local env)."""
    return PlayableOracle(_local_travelplanner(env, "oracle"))


def first_listing_agent(env: Any) -> FirstListingAgent:
    """The demo's weak TravelPlanner baseline (needs a local env)."""
    return FirstListingAgent(_local_travelplanner(env, "first-listing"))


def top_title_agent(env: Any) -> TopTitleAgent:
    """The demo's search-QA heuristic: one search, answer with the top passage's title."""
    return TopTitleAgent()


def _local_travelplanner(env: Any, agent: str) -> Any:
    from agentgym.envs.travelplanner.env import TravelPlannerEnv

    unwrapped = getattr(env, "unwrapped", None)
    if not isinstance(unwrapped, TravelPlannerEnv):
        raise ConfigError("agent", agent, f"an agent for a local TravelPlanner-v0 env (the {agent} agent "
                          "reads the episode's query and world)")
    return env
