"""A plan read once for ``strict`` mode: every day's route, venues and database matches.

Nothing here raises on plan content. Text is compared case-insensitively with whitespace
collapsed; cities are mapped to their database spelling; venues match a database row only by
exact (normalized) name in their own city.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentgym.envs.travelplanner.world.index import WorldIndex
from agentgym.envs.travelplanner._plan_text import (
    is_blank, mode_of, norm, strict_name_city, strict_pieces, strict_route, strict_route_in, strip_suffix,
)
from agentgym.envs.travelplanner.tasks import TravelTask

__all__ = ["Venue", "Day", "StrictPlan", "read_plan", "FIELDS", "MEALS"]

MEALS = ("breakfast", "lunch", "dinner")
FIELDS = ("transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")
MAX_FIELD = 2_000
"""Strict mode reads no text field longer than this (such a field is not a valid entry)."""
_PLACEHOLDER_DAY = "you don't need to fill in the information for this or later days."
_TABLE = {"breakfast": "restaurants", "lunch": "restaurants", "dinner": "restaurants",
          "attraction": "attractions", "accommodation": "accommodations"}


@dataclass(slots=True)
class Venue:
    raw: str
    name: str | None  # None when the text has no "Name, City" shape
    city: str | None  # database spelling when known, else the text as written
    known_city: bool
    row: Any | None  # the exactly matching database row, if any
    key: str  # identity for repeat checks

    def describe(self) -> str:
        return repr(self.raw if len(self.raw) <= 80 else self.raw[:77] + "...")


@dataclass(slots=True)
class Day:
    index: int
    problem: str | None = None  # the day cannot be read at all
    route: tuple[str, str] | None = None  # travel day: (from, to)
    city: str | None = None  # stay day
    transport: str = ""
    mode: str | None = None  # Flight / Self-driving / Taxi / None (official classification)
    meals: dict[str, Venue | None] = field(default_factory=dict)
    attractions: list[Venue] = field(default_factory=list)
    hotel: Venue | None = None
    missing_keys: list[str] = field(default_factory=list)
    not_text: list[str] = field(default_factory=list)  # fields holding neither text nor null (or too long)
    filled: int = 0  # how many of the eight official keys hold something (extra keys never count)

    @property
    def cities(self) -> tuple[str, ...]:
        if self.route:
            return self.route
        return (self.city,) if self.city else ()

    @property
    def last_city(self) -> str | None:
        return self.route[1] if self.route else self.city


@dataclass(slots=True)
class StrictPlan:
    days: list[Day]  # the first query.days entries (fewer when the plan is shorter)
    length: int  # len(plan)


def read_plan(q: TravelTask, raw_days: list[Any], ix: WorldIndex) -> StrictPlan:
    n = min(q.days, len(raw_days))
    return StrictPlan(days=[_read_day(i, raw_days[i], ix) for i in range(n)], length=len(raw_days))


def city_of(text: str, ix: WorldIndex) -> tuple[str, bool]:
    canon = ix.canon_city(text)
    return (canon, True) if canon is not None else (" ".join(text.split()), False)


def _read_day(i: int, raw: Any, ix: WorldIndex) -> Day:
    day = Day(index=i)
    if not isinstance(raw, dict):
        day.problem = f"day {i + 1} is a {type(raw).__name__}, not an object"
        return day
    if not raw:
        day.problem = f"day {i + 1} is empty"
        return day
    current = raw.get("current_city")
    if not isinstance(current, str) or is_blank(current):
        day.problem = f"day {i + 1} has no current_city"
        return day
    if len(current) > MAX_FIELD:
        day.problem = f"day {i + 1}: current_city is longer than {MAX_FIELD} characters"
        return day
    if norm(current) == _PLACEHOLDER_DAY:
        day.problem = f"day {i + 1} is marked as not needed"
        return day
    _read_city(day, current, ix)
    if day.problem:
        return day
    day.filled = 1 + _has_value(raw.get("days", raw.get("day")))  # current_city, and the day number
    for key in FIELDS:
        if key not in raw:
            day.missing_keys.append(key)
            continue
        value = raw[key]
        if value is not None and (not isinstance(value, str) or len(value) > MAX_FIELD):
            day.not_text.append(key)
            day.filled += _has_value(value)
            continue
        if is_blank(value):
            continue
        day.filled += 1
        _read_field(day, key, value, ix)
    return day


def _has_value(value: Any) -> bool:
    try:
        return bool(value) and value != "-"
    except Exception:  # noqa: BLE001 - exotic objects with a failing __bool__/__eq__
        return True


def _read_city(day: Day, current: str, ix: WorldIndex) -> None:
    route = strict_route(current)
    if route is not None:
        day.route = (city_of(route[0], ix)[0], city_of(route[1], ix)[0])
    elif "from " in current.lower() and " to " not in current.lower():
        day.problem = f"day {day.index + 1}: current_city {current!r} has 'from' but no 'to'"
    elif strip_suffix(current):
        day.city = city_of(strip_suffix(current), ix)[0]
    else:
        day.problem = f"day {day.index + 1}: current_city {current!r} names no city"


def _read_field(day: Day, key: str, value: str, ix: WorldIndex) -> None:
    if key == "transportation":
        day.transport = value.strip()
        day.mode = mode_of(value)
    elif key == "attraction":
        day.attractions = [venue(p, "attractions", ix) for p in strict_pieces(value)]
    elif key == "accommodation":
        day.hotel = venue(value, "accommodations", ix)
    else:
        day.meals[key] = venue(value, "restaurants", ix)


def venue(text: str, table: str, ix: WorldIndex) -> Venue:
    """The venue an entry names, with its exact database row (memoized per table and text)."""
    memo = ix.memo["venue"]
    key = (table, text)
    found = memo.get(key)
    if found is None:
        found = ix.remember("venue", key, _venue(text.strip(), table, ix))
    return found


def _venue(text: str, table: str, ix: WorldIndex) -> Venue:
    pair = strict_name_city(text)
    if pair is None:
        return Venue(raw=text, name=None, city=None, known_city=False, row=None, key=norm(text))
    name, city_text = pair
    city, known = city_of(city_text, ix)
    row = ix.exact(table, city, name) if known else None
    return Venue(raw=text, name=name, city=city, known_city=known, row=row, key=f"{norm(name)}|{norm(city)}")


def transport_route(day: Day, ix: WorldIndex) -> tuple[str, str] | None:
    """The route a transportation entry names (database spelling), else the day's travel route."""
    route = strict_route_in(day.transport)
    if route is None:
        return day.route
    return city_of(route[0], ix)[0], city_of(route[1], ix)[0]


__all__ += ["transport_route", "city_of", "venue"]
