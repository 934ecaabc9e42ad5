"""A scripted TravelPlanner agent that replays a query's reference plan through the tools.

It needs no model: it looks up what the reference plan uses (each visited city's
attractions, restaurants and accommodations, each leg's flights or driving distance), notes
the results, and submits the plan. Demos and tests use it to play full episodes.
"""

from __future__ import annotations

import json

from agentgym.envs.travelplanner.queries import TravelQuery
from agentgym.envs.travelplanner.reference import route_of_plan

__all__ = ["reference_plan_actions"]

_JSON_NAMES = {
    "FlightSearch": ("search_flights", ("origin", "destination", "date")),
    "GoogleDistanceMatrix": ("distance_matrix", ("origin", "destination", "mode")),
    "AttractionSearch": ("search_attractions", ("city",)),
    "RestaurantSearch": ("search_restaurants", ("city",)),
    "AccommodationSearch": ("search_accommodations", ("city",)),
    "NotebookWrite": ("notebook_write", ("description",)),
}


def reference_plan_actions(query: TravelQuery, action_format: str = "react", *, tools: bool = True) -> list[str]:
    """The actions that gather the reference plan's information and submit it.

    With ``tools=False`` (sole-planning mode) only the submission is returned.
    """
    if not query.annotated_plan:
        raise ValueError(f"query {query.id!r} has no reference plan to replay")
    plan = json.dumps(list(query.annotated_plan[: query.days]), ensure_ascii=False)
    calls = _lookups(query) if tools else []
    if action_format == "react":
        return [f"{name}[{', '.join(args)}]" for name, args in calls] + [f"Finish[{plan}]"]
    return [_tool_call(name, args) for name, args in calls] + [f"<answer>{plan}</answer>"]


def _lookups(query: TravelQuery) -> list[tuple[str, tuple[str, ...]]]:
    cities, legs = route_of_plan(query)
    calls: list[tuple[str, tuple[str, ...]]] = []
    for city in cities:
        for action in ("AttractionSearch", "RestaurantSearch", "AccommodationSearch"):
            calls += [(action, (city,)), ("NotebookWrite", (f"{action.removesuffix('Search')} in {city}",))]
    for (a, b, date), day in zip(legs, _travel_days(query)):
        mode = str(day.get("transportation", "")).lower()
        if "flight" in mode:
            calls.append(("FlightSearch", (a, b, date)))
        else:
            calls.append(("GoogleDistanceMatrix", (a, b, "taxi" if "taxi" in mode else "self-driving")))
        calls.append(("NotebookWrite", (f"Travel from {a} to {b}",)))
    return calls


def _travel_days(query: TravelQuery) -> list[dict]:
    return [d for d in query.annotated_plan[: query.days] if str(d.get("current_city", "")).startswith("from ")]


def _tool_call(action: str, args: tuple[str, ...]) -> str:
    name, params = _JSON_NAMES[action]
    return "<tool_call>" + json.dumps({"name": name, "arguments": dict(zip(params, args))}) + "</tool_call>"
