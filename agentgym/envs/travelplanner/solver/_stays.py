"""What a stay in one city can cost: the cheapest hotel for n nights, the attractions to see.

**Hotels.** A city's nights form one contiguous run (the route visits each city once), and
the cheapest way to fill it is a single listing: for any split of the run into stays at
several listings, each listing's minimum nights is at most its own part, hence at most the
whole run, so the cheapest of them could host every night at no higher cost. So the exact
optimum for ``n`` nights is ``n`` times the cheapest per-night group price among listings that
allow the house rule, have the room type, and ask for at most ``n`` nights.

**Venues.** Only rows the plan can name exactly are used: the first row of each normalised
name in its city (the one the strict evaluator resolves the name to), with a non-empty name (and, for
attractions, no ``;``). With ``must_pass="both"`` the official substring lookup must also land on
a row that both evaluators price and check the same way (same price, same cuisines, same
house rules and room type verdicts).
"""

from __future__ import annotations

import math
from typing import Any

from agentgym._toolbox import is_number
from agentgym.envs.travelplanner.evaluation import room_type_ok
from agentgym.envs.travelplanner.world.index import ceil_div
from agentgym.envs.travelplanner._plan_text import name_city
from agentgym.envs.travelplanner.solver._meals import CityMeals, cuisine_mask
from agentgym.envs.travelplanner.solver._problem import Problem

__all__ = ["CityStay", "usable_rows", "venue_text"]


def venue_text(row: Any, city: str) -> str:
    return f"{str(row.name).strip()}, {city}"


def usable_rows(p: Problem, table: str, city: str) -> list[Any]:
    """The rows of ``table`` in ``city`` a plan can name and have read back as themselves."""
    out = []
    for row in getattr(p.world, table)(city):
        name = str(row.name).strip()
        if not name or (table == "attractions" and ";" in name):
            continue
        if p.ix.exact(table, city, name) is not row:
            continue
        if p.must_pass == "both" and not _official_agrees(p, table, row, city):
            continue
        out.append(row)
    return out


def _official_agrees(p: Problem, table: str, row: Any, city: str) -> bool:
    """Whether the official reading of the entry (its ``"Name, City"`` parse, then the first
    row whose name contains that name) prices and checks it as ``row`` itself would be."""
    name, parsed_city = name_city(venue_text(row, city))
    first, only_one = p.ix.contains(table, parsed_city, name)
    if parsed_city != city or first is None:
        return False
    if first is row or table == "attractions":  # attractions are only checked to exist
        return True
    if table == "restaurants":
        return first.average_cost == row.average_cost and \
            cuisine_mask(first, p.cuisines) == cuisine_mask(row, p.cuisines)
    price = _group_price(p, row)  # and the official minimum-nights rule must not pick another row
    return not only_one and price is not None and _group_price(p, first) == price


class CityStay:
    """One candidate city: hotel prices by number of nights, attractions and meal costs."""

    def __init__(self, p: Problem, city: str) -> None:
        self.city = city
        self.attractions = usable_rows(p, "attractions", city)
        self.meals = CityMeals(p, usable_rows(p, "restaurants", city))
        self.hotel_night, self.hotel_row = _cheapest_hotels(p, city)

    def hotel(self, nights: int) -> tuple[float, Any] | None:
        """(cost of ``nights`` nights for the group, listing), or None when nothing fits."""
        unit = self.hotel_night[min(nights, len(self.hotel_night) - 1)]
        if unit == math.inf:
            return None
        return unit * nights, self.hotel_row[min(nights, len(self.hotel_row) - 1)]

    def stay_bound(self, stay_days: int) -> float:
        """Exact hotel cost plus the meals' lower bound for a visit with ``stay_days`` full days
        (``stay_days + 1`` nights); inf when the city cannot host such a visit."""
        if len(self.attractions) < stay_days:
            return math.inf
        hotel = self.hotel(stay_days + 1)
        if hotel is None:
            return math.inf
        return hotel[0] + self.meals.cheapest(3 * stay_days)


def _cheapest_hotels(p: Problem, city: str) -> tuple[list[float], list[Any]]:
    """``night[n]``: the cheapest per-night group price for a stay of ``n`` nights, and its row."""
    night = [math.inf] * (p.days + 1)
    rows: list[Any] = [None] * (p.days + 1)
    for row in usable_rows(p, "accommodations", city):
        price = _group_price(p, row)
        if price is None or row.minimum_nights > p.days:
            continue
        first = max(1, math.ceil(row.minimum_nights))
        for n in range(first, p.days + 1):
            if price < night[n]:
                night[n], rows[n] = price, row
    return night, rows


def _group_price(p: Problem, row: Any) -> float | None:
    """Price per night for the group, or None when the listing breaks a constraint."""
    if p.banned_rule is not None and p.banned_rule in str(row.house_rules):
        return None
    if p.room_type is not None and not room_type_ok(p.room_type, row.room_type):
        return None
    if not all(is_number(v) for v in (row.price, row.minimum_nights, row.maximum_occupancy)):
        return None
    if row.maximum_occupancy <= 0 and p.must_pass == "both":
        return None  # the official cost divides by it
    return row.price * ceil_div(p.people, max(row.maximum_occupancy, 1))  # as strict valid_cost
