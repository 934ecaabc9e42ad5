"""The 5 hard constraints, ``official`` mode (the strict versions are in ``_strict_hard``).

Each check takes ``(query, days, index)`` and returns ``(passed, reason)``; ``passed`` is None
when the query does not carry the constraint. They run only when the plan was delivered and
``is_not_absent`` and ``is_valid_information_in_sandbox`` passed (the caller gates them).
Reproduced quirks (numbers as in ``docs/travelplanner-evaluation.md``):

* Q3  venues match by substring + exact city; cost, house rules, room type and cuisines come
  from the *first* matching row;
* Q5  a flight's price is the first row with that number, whatever its route;
* Q6  in the cuisine check a meal in the origin city ends that *day* (``continue`` in the day
  loop), so a breakfast at home also skips the day's lunch and dinner;
* Q7  ``no flight`` / ``no self-driving`` look for ``Flight`` / ``Self-driving`` case-sensitively;
* Q11 only the first ``query.days`` entries count; an accommodation is paid once per day that
  lists it.
"""

from __future__ import annotations

from typing import Any

from agentgym.envs.travelplanner.evaluation._commonsense import _OfficialCrash, filled, flight_number, route_for
from agentgym.envs.travelplanner.world.index import WorldIndex, ceil_div
from agentgym.envs.travelplanner._plan_text import name_city
from agentgym.envs.travelplanner.tasks import TravelTask

__all__ = ["CHECKS", "RULE_TEXT", "ROOM_TYPE_ROW", "total_cost"]

Result = tuple[bool | None, str]
_MEALS = ("breakfast", "lunch", "dinner")
RULE_TEXT = {
    "smoking": "No smoking", "parties": "No parties", "children under 10": "No children under 10",
    "visitors": "No visitors", "pets": "No pets",
}
ROOM_TYPE_ROW = {"shared room": "Shared room", "private room": "Private room", "entire room": "Entire home/apt"}


def _span(q: TravelTask, days: list[Any]) -> range:
    return range(min(q.days, len(days)))


# -- Budget ---------------------------------------------------------------------------------
def total_cost(q: TravelTask, days: list[Any], ix: WorldIndex) -> Any:
    """The official total: transport, meals and one night per day listing an accommodation."""
    people = q.people_number
    total: Any = 0
    for i in _span(q, days):
        unit = days[i]
        value = unit["transportation"]
        if value and value != "-":
            key = (value, unit["current_city"], people)
            cost = ix.memo["transport_cost"].get(key)
            if cost is None:
                cost = ix.remember("transport_cost", key, _transport_cost(unit, value, people, ix))
            total += cost
        for meal in _MEALS:
            value = unit[meal]
            if value and value != "-":
                row = ix.venue("restaurants", value)[0]
                if row is not None:
                    total += row.average_cost * people
        value = unit["accommodation"]
        if value and value != "-":
            row = ix.venue("accommodations", value)[0]
            if row is not None:
                total += row.price * ceil_div(people, row.maximum_occupancy)
    return total


def _transport_cost(unit: Any, value: str, people: int, ix: WorldIndex) -> Any:
    a, b = route_for(unit, value)
    if a is None or b is None:
        return 0  # no parsable route: nothing is added
    low = value.lower()
    if "flight number" in low:
        rows = ix.flight_routes(flight_number(value))  # Q5: any route
        return rows[0][0] * people if rows else 0
    if "self-driving" in low:
        return ix.drive_cost(a, b, "self-driving") * ceil_div(people, 5)
    if "taxi" in low:
        return ix.drive_cost(a, b, "taxi") * ceil_div(people, 4)
    return 0


def valid_cost(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    total = total_cost(q, days, ix)
    if total <= q.budget:
        return True, f"total cost {total:g} is within the budget {q.budget}"
    return False, f"total cost {total:g} exceeds the budget {q.budget}"


# -- Room rule / room type: the first matching row of each listed accommodation -------------------
def _stays(q: TravelTask, days: list[Any], ix: WorldIndex):
    for i in _span(q, days):
        value = days[i]["accommodation"]
        if value and value != "-":
            row = ix.venue("accommodations", value)[0]
            if row is not None:
                yield i, value, row


def valid_room_rule(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    rule = q.local_constraint.house_rule
    if rule is None:
        return None, "the task has no house rule"
    banned = RULE_TEXT.get(rule)
    for i, value, row in _stays(q, days, ix):
        if banned is not None and banned in str(row.house_rules):
            return False, f"day {i + 1}: {value!r} says {banned!r}, the task needs {rule} allowed"
    return True, f"every accommodation allows {rule}"


def valid_room_type(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    wanted = q.local_constraint.room_type
    if wanted is None:
        return None, "the task has no room type"
    for i, value, row in _stays(q, days, ix):
        if not room_type_ok(wanted, row.room_type):
            return False, f"day {i + 1}: {value!r} has room type {row.room_type!r}, the task needs {wanted}"
    return True, f"every accommodation's room type is {wanted}"


def room_type_ok(wanted: str, actual: Any) -> bool:
    """Whether a listing's room type ``actual`` is the room type a task wants, as the official check reads it."""
    if wanted == "not shared room":
        return actual != "Shared room"
    target = ROOM_TYPE_ROW.get(wanted)
    return target is None or actual == target


# -- Cuisine ----------------------------------------------------------------------------------
def valid_cuisine(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    wanted = q.local_constraint.cuisine
    if not wanted:
        return None, "the task has no cuisine"
    seen: set[str] = set()
    for i in _span(q, days):
        unit = days[i]
        for meal in _MEALS:
            if filled(unit[meal]):
                _, city = name_city(unit[meal])
                if city == q.org:
                    break  # Q6: upstream's `continue` skips the rest of this day
                row = ix.venue("restaurants", unit[meal])[0]
                if row is not None:
                    seen.update(c for c in wanted if c in row.cuisines)
    if len(seen) == len(wanted):
        return True, f"every wanted cuisine is served ({', '.join(wanted)})"
    missing = [c for c in wanted if c not in seen]
    if not missing:  # duplicates in the query: upstream returns None and then crashes
        raise _OfficialCrash("the task repeats a cuisine")
    return False, f"no meal serves {missing[0]} cuisine"


# -- Transportation ---------------------------------------------------------------------------
def valid_transportation(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    rule = q.local_constraint.transportation
    if rule is None:
        return None, "the task has no transportation constraint"
    for i in _span(q, days):
        value = days[i]["transportation"]
        if filled(value):
            if rule == "no flight" and "Flight" in value:  # Q7: case-sensitive
                return False, f"day {i + 1} takes a flight; the task says no flight"
            if rule == "no self-driving" and "Self-driving" in value:
                return False, f"day {i + 1} is self-driving; the task says no self-driving"
    return True, f"the plan respects {rule!r}"


CHECKS = {
    "valid_cost": valid_cost,
    "valid_room_rule": valid_room_rule,
    "valid_cuisine": valid_cuisine,
    "valid_room_type": valid_room_type,
    "valid_transportation": valid_transportation,
}
