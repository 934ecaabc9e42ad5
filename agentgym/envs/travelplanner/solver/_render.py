"""The plan of a solved shape, as official day dicts.

Travel days carry the leg's transportation entry, the extra meals the cuisine constraint
needed (if any) and the night's accommodation in the arrival city; full days carry three
meals, one or two attractions and the accommodation. Cities are written in their database
spelling without a ``(State)`` suffix, venues as ``"Name, City"``.
"""

from __future__ import annotations

from typing import Any

from agentgym.envs.travelplanner.plan import PLAN_KEYS
from agentgym.envs.travelplanner.solver._meals import (
    SLOTS_PER_TRAVEL_DAY,
    RouteMeals,
    route_meals,
)
from agentgym.envs.travelplanner.solver._problem import Problem
from agentgym.envs.travelplanner.solver._search import Search, Shape
from agentgym.envs.travelplanner.solver._stays import venue_text

__all__ = ["render_plan"]

_ARRIVING = ("dinner", "lunch", "breakfast")  # slots a city takes on the day it arrives
_LEAVING = ("breakfast", "lunch", "dinner")  # and on the day it leaves
_MAX_SIGHTS_PER_DAY = 2


def render_plan(search: Search, shape: Shape) -> tuple[list[dict[str, Any]], float]:
    """The day dicts and their cost, recomputed from the shape (it must match the search's)."""
    p = search.p
    stops = (p.org, *shape.cities, p.org)
    travel = _travel_days(shape.stays)
    meals = shape.meals or route_meals([search.stays[c].meals for c in shape.cities], [3 * s for s in shape.stays])
    days = [_blank(t) for t in range(p.days)]
    cost = 0.0
    for j, t in enumerate(travel):
        move = search.legs.best(stops[j], stops[j + 1], t, shape.regime)
        days[t]["current_city"] = f"from {stops[j]} to {stops[j + 1]}"
        days[t]["transportation"] = move.text
        cost += move.cost
    for i, city in enumerate(shape.cities):
        cost += _fill_city(search, days, i, city, shape.stays[i], travel)
    cost += _place_meals(p, days, shape, travel, meals)
    return days, cost


def _travel_days(stays: tuple[int, ...]) -> list[int]:
    days = [0]
    for s in stays:
        days.append(days[-1] + s + 1)
    return days


def _blank(t: int) -> dict[str, Any]:
    return {key: (t + 1 if key == "days" else "-") for key in PLAN_KEYS}


def _fill_city(search: Search, days: list[dict[str, Any]], i: int, city: str, s: int, travel: list[int]) -> float:
    """Accommodation on every night in the city, the city on its full days, and sights."""
    stay = search.stays[city]
    hotel_cost, hotel = stay.hotel(s + 1)
    first, leave = travel[i], travel[i + 1]
    for t in range(first, leave):
        days[t]["accommodation"] = venue_text(hotel, city)
        if t != first:
            days[t]["current_city"] = city
    per_day = min(_MAX_SIGHTS_PER_DAY, len(stay.attractions) // s) if s else 0
    for n, t in enumerate(range(first + 1, leave)):
        sights = stay.attractions[n * per_day:(n + 1) * per_day]
        days[t]["attraction"] = "".join(venue_text(a, city) + ";" for a in sights)
    return hotel_cost


def _place_meals(p: Problem, days: list[dict[str, Any]], shape: Shape, travel: list[int], meals: RouteMeals) -> float:
    """Mandatory meals on the full days in order; extras on the arrival day, then the leaving day."""
    spill = 0
    for i, city in enumerate(shape.cities):
        rows, extra = meals.rows[i], meals.extras[i]
        texts = [venue_text(r, city) for r in rows]
        full_days = range(travel[i] + 1, travel[i + 1])
        slots = [(t, m) for t in full_days for m in ("breakfast", "lunch", "dinner")]
        free_in = SLOTS_PER_TRAVEL_DAY - spill
        arriving = [(travel[i], m) for m in _ARRIVING[:min(extra, free_in)]]
        spill = extra - len(arriving)
        leaving = [(travel[i + 1], m) for m in _LEAVING[:spill]]
        for (t, m), text in zip(slots + arriving + leaving, texts, strict=True):
            days[t][m] = text
    return meals.cost
