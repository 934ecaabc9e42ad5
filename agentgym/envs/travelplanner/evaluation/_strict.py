"""The 8 commonsense checks, ``strict`` mode: the official rules with the loopholes closed.

Each check takes ``(query, plan, index)`` with the plan read once by ``_strict_plan.read_plan``
and returns ``(passed, reason)``. The differences from ``official`` are listed in the table
of ``docs/travelplanner-evaluation.md``; the main ones: names match exactly (after
whitespace/case normalization), stay days are checked for their city, the last attraction
counts without a trailing ``;``, unknown transport modes fail, and no input raises.
"""

from __future__ import annotations

from agentgym.envs.travelplanner.evaluation._commonsense import _valid_sequence
from agentgym.envs.travelplanner.world.index import WorldIndex
from agentgym.envs.travelplanner._plan_text import norm, strict_route_in
from agentgym.envs.travelplanner.evaluation._strict_plan import MEALS, Day, StrictPlan, Venue, city_of, transport_route
from agentgym.envs.travelplanner.tasks import TravelTask

__all__ = ["CHECKS", "first_problem"]

Result = tuple[bool | None, str]


def first_problem(q: TravelTask, plan: StrictPlan) -> str | None:
    """Why the plan's day list cannot be walked (too short, or an unreadable day), if so."""
    for day in plan.days:
        if day.problem:
            return day.problem
    if len(plan.days) < q.days:
        return f"the plan has {len(plan.days)} day(s), the task asks for {q.days}"
    return None


# -- 1. Reasonable City Route ---------------------------------------------------------------
def reasonable_city(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    problem = first_problem(q, plan)
    if problem:
        return False, problem
    cities = [c for day in plan.days for c in day.cities]
    org = city_of(q.org, ix)[0]
    if cities[0] != org:
        return False, f"the trip starts in {cities[0]!r}, not the origin {org!r}"
    if cities[-1] != org:
        return False, f"the trip ends in {cities[-1]!r}, not back in {org!r}"
    if not _valid_sequence(cities):
        return False, f"the city sequence {' > '.join(cities)} is invalid"
    for city in cities:
        if ix.canon_city(city) is None:
            return False, f"{city!r} is not a valid city"
    outside = _outside_destination(q, cities[1:-1], ix)
    if outside:
        return False, outside
    return True, "the route is a closed loop from the origin through the destination"


def _outside_destination(q: TravelTask, interior: list[str], ix: WorldIndex) -> str | None:
    dest_city, dest_state = ix.canon_city(q.dest), ix.canon_state(q.dest)
    if dest_city is not None and (dest_state is None or q.visiting_city_number == 1):
        bad = [c for c in interior if c != dest_city]
        return f"{bad[0]!r} is not the destination {dest_city!r}" if bad else None
    if dest_state is not None:
        state_of = ix.world.state_of
        bad = [c for c in interior if state_of.get(c) != dest_state]
        return f"{bad[0]!r} is not in {dest_state!r}" if bad else None
    return None  # an unknown destination cannot be checked


# -- 2. Diverse Restaurants / 3. Diverse Attractions -----------------------------------------
def diverse_restaurants(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    seen: set[str] = set()
    for day in plan.days:
        for meal in MEALS:
            v = day.meals.get(meal)
            if v is not None:
                if v.key in seen:
                    return False, f"day {day.index + 1} {meal} {v.describe()} is repeated"
                seen.add(v.key)
    return True, "no restaurant is repeated"


def diverse_attractions(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    seen: set[str] = set()
    for day in plan.days:
        for v in day.attractions:
            if v.key in seen:
                return False, f"attraction {v.describe()} on day {day.index + 1} is repeated"
            seen.add(v.key)
    return True, "no attraction is repeated"


# -- 4. Minimum Nights Stay -------------------------------------------------------------------
def minimum_nights(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    runs: list[list] = []  # [venue or None, nights]
    for day in plan.days:
        if "accommodation" in day.missing_keys:
            return False, f"day {day.index + 1} has no accommodation key"
        key = day.hotel.key if day.hotel else None
        if runs and (runs[-1][0].key if runs[-1][0] else None) == key:
            runs[-1][1] += 1
        else:
            runs.append([day.hotel, 1])
    for hotel, nights in runs:
        if hotel is not None and hotel.row is not None and nights < hotel.row.minimum_nights:
            return False, (f"{hotel.describe()} is booked for {nights} night(s), "
                           f"its minimum is {hotel.row.minimum_nights:g}")
    return True, "every stay meets its minimum nights"


# -- 5. Non-conflicting Transportation --------------------------------------------------------
def transport_conflict(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    if not plan.days:
        return False, "the plan has no day 1"
    if plan.days[0].problem:
        return False, plan.days[0].problem
    if not plan.days[0].transport:
        return False, "day 1 has no transportation"
    modes = {day.mode for day in plan.days if day.transport}
    if "Self-driving" in modes and ("Flight" in modes or "Taxi" in modes):
        other = "flight" if "Flight" in modes else "taxi"
        return False, f"self-driving is combined with {other}"
    return True, "the transportation modes do not conflict"


# -- 6. Within Current City ----------------------------------------------------------------
def within_current_city(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    for day in plan.days:
        if day.problem:
            continue  # is_not_absent / is_reasonable_visiting_city report unreadable days
        bad = _transport_city_miss(day, ix) or _venue_city_miss(day)
        if bad:
            return False, f"day {day.index + 1}: {bad}"
    return True, "every entry is in the day's city"


def _transport_city_miss(day: Day, ix: WorldIndex) -> str | None:
    """Travel day: the entry names both ends (and any route it states is that route).
    Stay day: the entry names the city (and any route it states stays in that city)."""
    if not day.transport:
        return None
    text = norm(day.transport)
    named = strict_route_in(day.transport)
    route = None if named is None else (city_of(named[0], ix)[0], city_of(named[1], ix)[0])
    if day.route is not None:
        if (route is not None and route != day.route) or not all(norm(c) in text for c in day.route):
            return f"the transportation does not go from {day.route[0]} to {day.route[1]}"
    elif (route is not None and route != (day.city, day.city)) or norm(day.city) not in text:
        return f"the transportation {day.transport[:60]!r} is not within {day.city}"
    return None


def _venue_city_miss(day: Day) -> str | None:
    allowed = day.cities
    for meal in MEALS:
        v = day.meals.get(meal)
        if v is not None and not _in_cities(v, allowed):
            return f"the {meal} {v.describe()} is not in {' or '.join(allowed)}"
    for v in day.attractions:
        if not _in_cities(v, allowed):
            return f"the attraction {v.describe()} is not in {' or '.join(allowed)}"
    if day.hotel is not None and not _in_cities(day.hotel, allowed[-1:]):
        return f"the accommodation {day.hotel.describe()} is not in {allowed[-1]}"
    return None


def _in_cities(v: Venue, allowed: tuple[str, ...]) -> bool:
    if v.city is not None:
        return v.city in allowed
    text = norm(v.raw)  # no "Name, City" shape: accept when the text names an allowed city
    return any(norm(c) in text for c in allowed)


# -- 7. Within Sandbox --------------------------------------------------------------------
def within_sandbox(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    for day in plan.days:
        if day.problem:
            continue
        if day.not_text:
            return False, f"day {day.index + 1}: {day.not_text[0]} is not text (or is too long)"
        bad = _sandbox_transport(q, day, ix) or _sandbox_venues(day)
        if bad:
            return False, f"day {day.index + 1}: {bad}"
    return True, "every entry exists in the database"


def _sandbox_transport(q: TravelTask, day: Day, ix: WorldIndex) -> str | None:
    if not day.transport:
        return None
    low = day.transport.lower()
    if day.mode is None:
        return f"unknown transportation mode {day.transport[:60]!r}"
    route = transport_route(day, ix)
    if route is None:
        return f"the transportation {day.transport[:60]!r} names no route"
    if day.mode == "Flight":
        number = flight_number_strict(day.transport)
        if number is None:
            return f"the flight {day.transport[:60]!r} has no flight number"
        date = q.date[day.index] if day.index < len(q.date) else None
        if ix.strict_flight(number, route[0], route[1], date) is None:
            return f"flight {number} from {route[0]} to {route[1]} on {date} is not in the database"
        return None
    mode = "self-driving" if "self-driving" in low else "taxi"
    if ix.drive_cost(route[0], route[1], mode) is None:
        return f"{mode} from {route[0]} to {route[1]} has no valid distance"
    return None


def flight_number_strict(text: str) -> str | None:
    low = text.lower()
    at = low.find("flight number")
    if at < 0:
        return None
    rest = text[at + len("flight number"):].lstrip(" :\t")
    number = rest.split(",")[0].split(";")[0].strip()
    return number or None


def _sandbox_venues(day: Day) -> str | None:
    for meal in MEALS:
        v = day.meals.get(meal)
        if v is not None and v.row is None:
            return f"{meal} {v.describe()} is not a restaurant in the database"
    for v in day.attractions:
        if v.row is None:
            return f"attraction {v.describe()} is not in the database"
    if day.hotel is not None and day.hotel.row is None:
        return f"accommodation {day.hotel.describe()} is not in the database"
    return None


# -- 8. Complete Information ------------------------------------------------------------------
def not_absent(q: TravelTask, plan: StrictPlan, ix: WorldIndex) -> Result:
    problem = first_problem(q, plan)
    if problem:
        return False, problem
    cities = {c for day in plan.days for c in day.cities} - {city_of(q.org, ix)[0]}
    if len(cities) != q.visiting_city_number:
        return False, f"the plan visits {len(cities)} city(ies), the task asks for {q.visiting_city_number}"
    for day in plan.days:
        bad = _day_complete(q, day)
        if bad:
            return False, f"day {day.index + 1}: {bad}"
    total = sum(day.filled for day in plan.days)  # the official count (days and current_city included)
    if total < 0.5 * 6 * q.days:
        return False, f"only {total} values are filled, fewer than half of {6 * q.days}"
    return True, "every required entry is present"


def _day_complete(q: TravelTask, day: Day) -> str | None:
    if day.missing_keys:
        return f"no {day.missing_keys[0]} key"
    if day.route is not None and not day.transport:
        return "a travel day without transportation"
    if day.route is None:
        if not day.attractions and "attraction" not in day.not_text:
            return "no attraction"
        if any(day.meals.get(m) is None and m not in day.not_text for m in MEALS):
            return "a missing meal"
    if day.index != q.days - 1 and day.hotel is None and "accommodation" not in day.not_text:
        return "no accommodation"
    return None


CHECKS = {
    "is_reasonable_visiting_city": reasonable_city,
    "is_valid_restaurants": diverse_restaurants,
    "is_valid_attractions": diverse_attractions,
    "is_valid_accommodation": minimum_nights,
    "is_valid_transportation": transport_conflict,
    "is_valid_information_in_current_city": within_current_city,
    "is_valid_information_in_sandbox": within_sandbox,
    "is_not_absent": not_absent,
}
