"""The 5 hard constraints, ``strict`` mode.

Same rules as ``official`` but every amount and attribute comes from the *exactly* matched row
(flights: number + route + date of that day), the cuisine check skips only the meals in the
origin city, and the transportation constraint compares modes case-insensitively.
"""

from __future__ import annotations

from typing import Any

from agentgym.envs.travelplanner.evaluation._hard import RULE_TEXT, room_type_ok
from agentgym.envs.travelplanner.world.index import WorldIndex, ceil_div
from agentgym.envs.travelplanner.evaluation._strict import flight_number_strict
from agentgym.envs.travelplanner.evaluation._strict_plan import MEALS, Day, StrictPlan, city_of, transport_route
from agentgym.envs.travelplanner.tasks import TravelTask

__all__ = ["CHECKS", "total_cost"]

Result = tuple[bool | None, str]


def total_cost(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Any:
    people = q.people_number
    total: Any = 0
    for day in plan.days:
        total += _transport_cost(q, day, ix)
        for meal in MEALS:
            v = day.meals.get(meal)
            if v is not None and v.row is not None:
                total += v.row.average_cost * people
        if day.hotel is not None and day.hotel.row is not None:
            row = day.hotel.row
            total += row.price * ceil_div(people, max(row.maximum_occupancy, 1))
    return total


def _transport_cost(q: TravelTask, day: Day, ix: WorldIndex) -> Any:
    route = transport_route(day, ix) if day.transport else None
    if route is None:
        return 0
    people = q.people_number
    if day.mode == "Flight":
        number = flight_number_strict(day.transport)
        date = q.date[day.index] if day.index < len(q.date) else None
        flight = ix.strict_flight(number, route[0], route[1], date) if number else None
        return flight.price * people if flight is not None else 0
    if day.mode in ("Self-driving", "Taxi"):
        mode = "self-driving" if "self-driving" in day.transport.lower() else "taxi"
        cost = ix.drive_cost(route[0], route[1], mode)
        return 0 if cost is None else cost * ceil_div(people, 5 if mode == "self-driving" else 4)
    return 0


def valid_cost(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    total = total_cost(q, plan, ix)
    if total <= q.budget:
        return True, f"total cost {total:g} is within the budget {q.budget}"
    return False, f"total cost {total:g} exceeds the budget {q.budget}"


def _stays(plan: StrictPlan):
    for day in plan.days:
        if day.hotel is not None and day.hotel.row is not None:
            yield day, day.hotel


def valid_room_rule(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    rule = q.local_constraint.house_rule
    if rule is None:
        return None, "the task has no house rule"
    banned = RULE_TEXT.get(rule)
    for day, hotel in _stays(plan):
        if banned is not None and banned in str(hotel.row.house_rules):
            return False, f"day {day.index + 1}: {hotel.describe()} says {banned!r}, the task needs {rule} allowed"
    return True, f"every accommodation allows {rule}"


def valid_room_type(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    wanted = q.local_constraint.room_type
    if wanted is None:
        return None, "the task has no room type"
    for day, hotel in _stays(plan):
        if not room_type_ok(wanted, hotel.row.room_type):
            return False, (f"day {day.index + 1}: {hotel.describe()} has room type {hotel.row.room_type!r}, "
                           f"the task needs {wanted}")
    return True, f"every accommodation's room type is {wanted}"


def valid_cuisine(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    wanted = q.local_constraint.cuisine
    if not wanted:
        return None, "the task has no cuisine"
    org = city_of(q.org, ix)[0]
    seen: set[str] = set()
    for day in plan.days:
        for meal in MEALS:
            v = day.meals.get(meal)
            if v is not None and v.row is not None and v.city != org:  # skip only this meal
                seen.update(c for c in wanted if c in v.row.cuisines)
    missing = [c for c in dict.fromkeys(wanted) if c not in seen]
    if missing:
        return False, f"no meal outside {org} serves {missing[0]} cuisine"
    return True, f"every wanted cuisine is served ({', '.join(wanted)})"


def valid_transportation(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    rule = q.local_constraint.transportation
    if rule is None:
        return None, "the task has no transportation constraint"
    banned = {"no flight": "flight", "no self-driving": "self-driving"}.get(rule.lower())
    for day in plan.days:
        if banned is not None and banned in day.transport.lower():  # any case
            return False, f"day {day.index + 1} uses {banned}; the task says {rule}"
    return True, f"the plan respects {rule!r}"


CHECKS = {
    "valid_cost": valid_cost,
    "valid_room_rule": valid_room_rule,
    "valid_cuisine": valid_cuisine,
    "valid_room_type": valid_room_type,
    "valid_transportation": valid_transportation,
}
