"""The demo's scripted agents: a weak TravelPlanner baseline and a search-QA heuristic."""

from __future__ import annotations

import re
from typing import Any

from agentgym.envs.travelplanner.oracle import OracleAgent
from agentgym.envs.travelplanner.solver import solve

__all__ = ["FirstListingAgent", "TopTitleAgent"]

_TITLE = re.compile(r"Doc 1\(Title: (.*?)\)")


class FirstListingAgent(OracleAgent):
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

        result = solve(self.env.query, self.env.world, mode="both", time_limit=self.time_limit)
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

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info.get("turn") == 0:
            self._searched = False
        if not self._searched:
            self._searched = True
            return f"<search>{info['extra'].get('question', '')}</search>"
        match = _TITLE.search(observation)
        return f"<answer>{match.group(1) if match else 'unknown'}</answer>"
