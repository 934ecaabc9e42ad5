"""Reference information for sole-planning mode, computed with the env's own tools.

The official dataset's ``reference_information`` follows the task's annotated route: for each
visited city its attractions, restaurants and accommodations, then for each leg the flights on
that leg's date and the self-driving and taxi distances. When a task has an annotated plan we
collect exactly that. Without one, the route is unknown, so we collect the same entries for
candidate cities: the destination city, or the first ``max_candidates`` cities of the
destination state (in ``citySet_with_states`` order), with legs from the origin on the first
day, back to the origin on the last day, and between candidates on the middle travel days
(every other day, as in the official 5- and 7-day routes).
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.tools import distance_matrix, strip_state
from agentgym.envs.travelplanner.world import World

__all__ = ["reference_information", "route_of_plan"]


def reference_information(task: TravelTask, world: World, tools, *, max_candidates: int = 4) -> list[dict[str, Any]]:
    """``[{'Description': ..., 'Content': ...}]`` entries, in the official order."""
    route = route_of_plan(task)
    if route is not None:
        cities, legs = route
    else:
        cities, legs = _candidate_route(task, world, max_candidates)
    entries = []
    for city in cities:
        for label, action in (("Attractions", "AttractionSearch"), ("Restaurants", "RestaurantSearch"),
                              ("Accommodations", "AccommodationSearch")):
            entries.append(_entry(f"{label} in {city}", tools.by_action(action).run(city).content))
    for a, b, date in legs:
        entries.append(_entry(f"Flight from {a} to {b} on {date}", tools.by_action("FlightSearch").run(a, b, date).content))
        entries.append(_entry(f"Self-driving from {a} to {b}", distance_matrix(world, a, b, "self-driving").content))
        entries.append(_entry(f"Taxi from {a} to {b}", distance_matrix(world, a, b, "taxi").content))
    return entries


def route_of_plan(task: TravelTask) -> tuple[list[str], list[tuple[str, str, str]]] | None:
    """Visited cities and (from, to, date) legs of the task's annotated plan, if it has one."""
    if not task.annotated_plan:
        return None
    cities: list[str] = []
    legs: list[tuple[str, str, str]] = []
    for i, day in enumerate(task.annotated_plan[: task.days]):
        current = str(day.get("current_city", ""))
        if current.startswith("from ") and " to " in current:
            a, b = (strip_state(x) for x in current[5:].split(" to ", 1))
            legs.append((a, b, task.date[i] if i < len(task.date) else ""))
            if b != task.org and b not in cities:
                cities.append(b)
    return cities, legs


def _candidate_route(task: TravelTask, world: World, max_candidates: int):
    if task.visiting_city_number <= 1:
        cities = [task.dest]
    else:
        cities = list((world.cities_in_state(task.dest) or ())[:max_candidates])
    first, last = task.date[0], task.date[-1]
    legs = [(task.org, c, first) for c in cities]
    middle = task.date[2:-1:2]  # travel days 3, 5 of 5- and 7-day trips
    legs += [(a, b, d) for d in middle for a, b in permutations(cities, 2)]
    legs += [(c, task.org, last) for c in cities]
    return cities, legs


def _entry(description: str, content: str) -> dict[str, Any]:
    return {"Description": description, "Content": content}
