"""Scripted TravelPlanner episodes: the actions that gather a plan's information and submit it.

``solver_actions(task, world)`` plays the exact solver's plan (``solver.solve`` in ``both``
mode, so the plan passes ``strict`` and ``official`` evaluation): in tool-use mode it first looks
up with the env's own tools everything the plan uses (the destination state's cities, each
visited city's attractions, restaurants and accommodations, each leg's flights or driving
distance), writing each result to the notebook, then submits the plan; a task with no plan
within its budget gets ``GiveUp``. It works in both modes (``tool-use``, ``sole-planning``) and
both action formats (``react``, ``json``). ``agentgym.agents.SolverAgent`` plays it.

``gold_plan_actions(task)`` replays a task's gold (annotated) plan the same way: the lookups it
needs, then the plan. It needs no solver run; demos and tests use it to play full episodes
(``agentgym.agents.travelplanner_gold_agent``).
"""

from __future__ import annotations

import json
from typing import Any

from agentgym._deprecated import renamed_kwargs
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.solver import solve
from agentgym.envs.travelplanner.tools import TOOLS, strip_state
from agentgym.envs.travelplanner.world import World
from agentgym.errors import DataError

__all__ = ["solver_actions", "plan_actions", "gold_plan_actions", "give_up"]

_TOOLS = {tool.action: tool for tool in TOOLS}  # names and parameters as the env declares them
Call = tuple[str, tuple[str, ...]]


@renamed_kwargs({"query": "task"})
def solver_actions(task: TravelTask, world: World, action_format: str = "react", *, tools: bool = True,
                   time_limit: float | None = 30.0) -> list[str]:
    """Every action of a solver episode: the lookups (``tools=True``), then the submission."""
    result = solve(task, world, must_pass="both", time_limit=time_limit)
    if not result.solved:
        return [give_up(f"no plan: {result.reason}", action_format)]
    return plan_actions(task, result.plan, action_format, tools=tools)


@renamed_kwargs({"query": "task"})
def plan_actions(task: TravelTask, plan: list[dict[str, Any]] | tuple[dict[str, Any], ...],
                 action_format: str = "react", *, tools: bool = True) -> list[str]:
    """Look up through the tools everything ``plan`` uses (``tools=True``), then submit it."""
    calls = _lookups(task, plan) if tools else []
    text = json.dumps(list(plan), ensure_ascii=False)
    submit = f"Finish[{text}]" if action_format == "react" else f"<answer>{text}</answer>"
    return [_format(name, args, action_format) for name, args in calls] + [submit]


@renamed_kwargs({"query": "task"})
def gold_plan_actions(task: TravelTask, action_format: str = "react", *, tools: bool = True) -> list[str]:
    """The actions that gather the gold (annotated) plan's information and submit it.

    With ``tools=False`` (sole-planning mode) only the submission is returned.
    """
    if not task.annotated_plan:
        raise DataError(f"task {task.id!r} has no gold plan to replay")
    return plan_actions(task, task.annotated_plan[: task.days], action_format, tools=tools)


def _lookups(task: TravelTask, plan: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> list[Call]:
    legs = _legs(plan)
    route = list(dict.fromkeys(b for _, _, b, _ in legs if b != task.org))
    calls: list[Call] = [("CitySearch", (task.dest,))] if task.visiting_city_number > 1 else []
    for city in route:
        for action in ("AttractionSearch", "RestaurantSearch", "AccommodationSearch"):
            calls += [(action, (city,)), ("NotebookWrite", (f"{action.removesuffix('Search')} in {city}",))]
    for day, a, b, transport in legs:
        if "flight" in transport:
            calls.append(("FlightSearch", (a, b, task.date[day])))
        else:
            calls.append(("GoogleDistanceMatrix", (a, b, "taxi" if "taxi" in transport else "self-driving")))
        calls.append(("NotebookWrite", (f"Travel from {a} to {b} on {task.date[day]}",)))
    return calls


def _legs(plan: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> list[tuple[int, str, str, str]]:
    """(day index, from, to, lowercased transportation) of each travel day, state suffixes dropped."""
    legs = []
    for day, entry in enumerate(plan):
        current = str(entry.get("current_city", ""))
        if current.startswith("from ") and " to " in current:
            a, b = current[len("from "):].split(" to ", 1)
            legs.append((day, strip_state(a), strip_state(b), str(entry.get("transportation", "")).lower()))
    return legs


def _format(action: str, args: tuple[str, ...], action_format: str) -> str:
    if action_format == "react":
        return f"{action}[{', '.join(args)}]"
    tool = _TOOLS[action]
    arguments = {param.name: arg for param, arg in zip(tool.params, args)}
    return "<tool_call>" + json.dumps({"name": tool.name, "arguments": arguments}) + "</tool_call>"


def give_up(reason: str, action_format: str) -> str:
    """The action that ends an episode without a plan, in ``action_format``."""
    if action_format == "react":
        return f"GiveUp[{reason}]"
    return "<tool_call>" + json.dumps({"name": "give_up", "arguments": {"reason": reason}}) + "</tool_call>"
