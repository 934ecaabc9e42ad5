"""The 8 commonsense checks, ``official`` mode: the official evaluator's verdicts, quirks included.

Each check takes ``(query, days, index)`` (``days`` = the raw day list) and returns
``(passed, reason)``. They are written to behave like the official code on every input it can
read, including its quirks (numbered as in the quirk list of ``docs/travelplanner-evaluation.md``):

* Q1  the current-city check iterates over the *characters* of the city on non-travel days;
* Q2  attraction strings are split on ``;`` and the last piece is dropped;
* Q3  venue names match by *substring* (plus exact city); the first matching row is used;
* Q4  the minimum-nights rule applies only when exactly one row matches;
* Q5  a flight is valid in the sandbox when its number *and* route exist (date ignored);
* Q8  flight + taxi is not a transportation conflict;
* Q9  transportation naming none of flight / self-driving / taxi is not checked in the sandbox;
* Q10 inputs the official code cannot read raise here too (the caller turns the exception
  into an ``evaluation_error`` verdict instead of aborting);
* Q11 only the first ``query.days`` entries are evaluated;
* Q12 ``is_not_absent`` counts every key with a value (``days``, ``current_city`` included);
* Q17 a ``(State)`` suffix is cut but the text not stripped (``"Rockford (Illinois)"`` -> ``"Rockford "``);
* Q18 a 3-day trip's destination is never checked; the origin only when day 1 is a travel day;
* Q19 repeats are compared as raw strings; Q20 flight dates are never checked;
* Q21 names and cities are compared case- and space-sensitively.

Where the official code returns a verdict for malformed input, so do these; where it raises,
these raise (``_OfficialCrash`` with a readable message where the cause is known).
"""

from __future__ import annotations

from typing import Any

from agentgym._memo import memoize
from agentgym.envs.travelplanner.world.index import WorldIndex
from agentgym.envs.travelplanner._plan_text import before_paren, from_to, mode_of
from agentgym.envs.travelplanner.tasks import TravelTask

__all__ = ["CHECKS", "flight_number", "route_for", "filled"]

Result = tuple[bool | None, str]
_MEALS = ("breakfast", "lunch", "dinner")
_PLACEHOLDER_DAY = "You don't need to fill in the information for this or later days."


class _OfficialCrash(Exception):
    """The official evaluator would raise here and abort the whole run."""


def filled(value: Any) -> bool:
    """The official "has a value" test: truthy and not ``'-'``."""
    return bool(value) and value != "-"


def _span(q: TravelTask, days: list[Any]) -> range:
    return range(min(q.days, len(days)))  # Q11


def _route(text: Any) -> tuple[Any, Any]:
    """``from_to`` + suffix removal on both ends; a ``from`` without ``to`` crashes (Q10)."""
    a, b = from_to(text)
    if a is None or b is None:
        raise _OfficialCrash(f"'from' without a 'from A to B' route in {str(text)[:60]!r}")
    return before_paren(a), before_paren(b)


@memoize(8 << 20, 4096)
def current_city(value: Any) -> tuple[Any, ...]:
    """``(A, B)`` on a travel day (``'from'`` in the value), else ``(city,)``; memoized per text.

    Like upstream: ``'from'`` anywhere (case-sensitive) makes it a travel day, a ``from``
    without a route crashes, and the ``(State)`` suffix is cut but the text not stripped."""
    if "from" in value:
        return _route(value)
    return (before_paren(value),)


def flight_number(value: str) -> str:
    """The text between ``Flight Number: `` (case-sensitive) and the next comma (Q10 if absent)."""
    parts = value.split("Flight Number: ")
    if len(parts) < 2:
        raise _OfficialCrash(f"no case-sensitive 'Flight Number: ' in {value[:60]!r}")
    return parts[1].split(",")[0]


def route_for(unit: Any, value: Any) -> tuple[Any, Any]:
    """Route of a transportation entry: from its own text, else from ``current_city``."""
    a, b = from_to(value)
    if a is None or b is None:
        a, b = from_to(unit["current_city"])
    return a, b


# -- 1. Reasonable City Route ---------------------------------------------------------------
def reasonable_city(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    cities: list[Any] = []
    for i in _span(q, days):
        entry = current_city(days[i]["current_city"])
        if i == 0 and len(entry) == 2 and entry[0] != q.org:
            return False, f"day 1 starts from {entry[0]!r}, not the origin {q.org!r}"
        cities += entry
    if cities[0] != cities[-1]:
        return False, f"the trip is not a closed circle ({cities[0]!r} ... {cities[-1]!r})"
    if not _valid_sequence(cities):
        return False, f"the city sequence {' > '.join(map(str, cities))} is invalid"
    state_of = ix.world.state_of
    for k, city in enumerate(cities):
        if city not in state_of:
            return False, f"{city!r} is not a valid city"
        if k not in (0, len(cities) - 1) and q.days > 3 and state_of[city] != q.dest:
            return False, f"{city!r} is not in {q.dest!r}"
    return True, "the route is a closed loop through valid cities"


def _valid_sequence(cities: list[Any]) -> bool:
    """At least 3 entries; interior cities contiguous, never a run of one, never revisited."""
    if len(cities) < 3:
        return False
    seen: set[Any] = set()
    i, n = 0, len(cities)
    while i < n:
        city = cities[i]
        if city in seen and i != 0 and i != n - 1:
            return False
        run = 0
        while i < n and cities[i] == city:
            run += 1
            i += 1
        if run == 1 and 0 < i - 1 < n - 1:
            return False
        seen.add(city)
    return True


# -- 2. Diverse Restaurants / 3. Diverse Attractions -----------------------------------------
def diverse_restaurants(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    seen: list[Any] = []  # a list, as upstream: values need not be hashable
    for i in _span(q, days):
        unit = days[i]
        for meal in _MEALS:
            if meal in unit:
                value = unit[meal]
                if not value or value == "-":
                    continue
                if value in seen:  # exact string comparison
                    return False, f"day {i + 1} {meal} {value!r} is repeated"
                seen.append(value)
    return True, "no restaurant is repeated"


def diverse_attractions(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    seen: set[str] = set()
    for i in _span(q, days):
        unit = days[i]
        if "attraction" in unit and filled(unit["attraction"]):
            for piece in unit["attraction"].split(";")[:-1]:  # Q2
                if piece in seen:
                    return False, f"attraction {piece!r} on day {i + 1} is repeated"
                seen.add(piece)
    return True, "no attraction is repeated"


# -- 4. Minimum Nights Stay -------------------------------------------------------------------
def minimum_nights(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    stays: list[Any] = []
    for i in _span(q, days):
        unit = days[i]
        if "accommodation" not in unit:
            return False, f"day {i + 1} has no accommodation key"
        stays.append(unit["accommodation"])
    for value, nights in _runs(stays):
        if value not in ("-", ""):
            row, only_one = ix.venue("accommodations", value)
            if only_one and nights < row.minimum_nights:  # Q4
                return False, f"{value!r} is booked for {nights} night(s), its minimum is {row.minimum_nights:g}"
    return True, "every stay meets its minimum nights"


def _runs(values: list[Any]) -> list[tuple[Any, int]]:
    runs: list[tuple[Any, int]] = []
    for v in values:
        if runs and runs[-1][0] == v:
            runs[-1] = (v, runs[-1][1] + 1)
        else:
            runs.append((v, 1))
    return runs


# -- 5. Non-conflicting Transportation --------------------------------------------------------
def transport_conflict(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    first = days[0]["transportation"]  # day 1 = the first entry of the list
    if not filled(first):
        return False, "day 1 has no transportation"
    modes = {mode_of(first)}
    for i in _span(q, days):
        unit = days[i]
        if "transportation" in unit and filled(unit["transportation"]):
            modes.add(mode_of(unit["transportation"]))
    if "Self-driving" in modes and ("Flight" in modes or "Taxi" in modes):  # Q8: flight + taxi is fine
        other = "flight" if "Flight" in modes else "taxi"
        return False, f"self-driving is combined with {other}"
    return True, "the transportation modes do not conflict"


# -- 6. Within Current City ----------------------------------------------------------------
def within_current_city(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    for i in _span(q, days):
        unit = days[i]
        entry = current_city(unit["current_city"])
        # Q1: on a stay day upstream keeps the city as a string, so the loops see its characters
        allowed: Any = entry if len(entry) == 2 else entry[0]
        bad = _current_city_miss(unit, allowed)
        if bad:
            return False, f"day {i + 1}: the {bad} is not in the current city"
    return True, "every entry is in the day's city"


def _current_city_miss(unit: Any, allowed: Any) -> str | None:
    if "transportation" in unit:
        value = unit["transportation"]
        if value and value != "-":
            for city in allowed:
                if city not in value:
                    return "transportation"
    for meal in _MEALS:
        if meal in unit:
            value = unit[meal]
            if value and value != "-" and not _names_any(allowed, value):
                return meal
    if "attraction" in unit:
        value = unit["attraction"]
        if value and value != "-":
            for piece in value.split(";")[:-1]:  # Q2
                if not _names_any(allowed, piece):
                    return "attraction"
    if "accommodation" in unit:
        value = unit["accommodation"]
        if value and value != "-" and allowed[-1] not in value:  # Q1: the last *character* on a stay day
            return "accommodation"
    return None


def _names_any(allowed: Any, text: Any) -> bool:
    for city in allowed:
        if city in text:
            return True
    return False


# -- 7. Within Sandbox --------------------------------------------------------------------
def within_sandbox(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    for i in _span(q, days):
        unit = days[i]
        bad = _sandbox_transport(unit, ix) or _sandbox_venues(unit, ix)
        if bad:
            return False, f"day {i + 1}: {bad}"
    return True, "every entry exists in the database"


def _sandbox_transport(unit: Any, ix: WorldIndex) -> str | None:
    value = unit["transportation"]
    if not value or value == "-":
        return None
    key = (value, unit["current_city"])
    try:
        return ix.memo["sandbox_transport"][key]
    except KeyError:
        pass
    except TypeError:  # unhashable values: no memo (and, as upstream, most likely a crash below)
        return _transport_in_sandbox(unit, value, ix)
    found = ix.remember("sandbox_transport", key, _transport_in_sandbox(unit, value, ix))
    return found


def _transport_in_sandbox(unit: Any, value: Any, ix: WorldIndex) -> str | None:
    a, b = route_for(unit, value)
    low = value.lower()
    if "flight number" in low:
        if a is None or b is None:
            raise _OfficialCrash(f"the flight {value[:60]!r} has no 'from A to B' route")
        a, b = before_paren(a), before_paren(b)
        number = flight_number(value)
        if not any(o == a and d == b for _, o, d in ix.flight_routes(number)):
            return f"flight {number} from {a} to {b} is not in the database"
    elif "self-driving" in low or "taxi" in low:
        if a is None or b is None:
            a = b = "-"
        a, b = before_paren(a), before_paren(b)
        mode = "self-driving" if "self-driving" in low else "taxi"
        if ix.drive_cost(a, b, mode) is None:
            return f"{mode} from {a} to {b} has no valid distance"
    return None  # Q9: any other mode is not checked


def _sandbox_venues(unit: Any, ix: WorldIndex) -> str | None:
    for meal in _MEALS:
        if meal in unit:
            value = unit[meal]
            if value and value != "-" and ix.venue("restaurants", value)[0] is None:  # Q3
                return f"{meal} {value!r} is not in the database"
    if "attraction" in unit:
        value = unit["attraction"]
        if value and value != "-":
            for piece in value.split(";")[:-1]:  # Q2
                if ix.venue("attractions", piece)[0] is None:
                    return f"attraction {piece!r} is not in the database"
    if "accommodation" in unit:
        value = unit["accommodation"]
        if value and value != "-" and ix.venue("accommodations", value)[0] is None:
            return f"accommodation {value!r} is not in the database"
    return None


# -- 8. Complete Information ------------------------------------------------------------------
def not_absent(q: TravelTask, days: list[Any], ix: WorldIndex) -> Result:
    span = _span(q, days)
    present = sum(1 for i in span if days[i] != {} and days[i]["current_city"] != _PLACEHOLDER_DAY)
    if present != q.days:
        return False, f"the plan has {present} filled day(s) of {q.days}"
    bad = _city_count(q, days)
    if bad:
        return False, bad
    total = 0
    for i in span:
        unit = days[i]
        bad = _day_complete(q, unit, i)
        if bad:
            return False, f"day {i + 1}: {bad}"
        for key in unit:  # Q12: every key counts
            value = unit[key]
            if value and value != "-":
                total += 1
    if total * 1.0 / (6 * q.days) < 0.5:
        return False, f"only {total} of {6 * q.days} pieces of information are filled"
    return True, "every required entry is present"


def _city_count(q: TravelTask, days: list[Any]) -> str | None:
    cities: set[Any] = set()
    for i in _span(q, days):
        entry = current_city(days[i]["current_city"])
        if i == 0 and len(entry) == 2 and entry[0] != q.org:
            return f"day 1 starts from {entry[0]!r}, not the origin {q.org!r}"
        cities.update(entry)
    cities.discard(q.org)
    if len(cities) != q.visiting_city_number:
        return f"the plan visits {len(cities)} city(ies), the task asks for {q.visiting_city_number}"
    return None


def _day_complete(q: TravelTask, unit: Any, i: int) -> str | None:
    for key in ("transportation", "breakfast", "lunch", "dinner", "attraction", "accommodation"):
        if key not in unit:
            return f"no {key} key"
    city = unit["current_city"]
    if ("from " in city or "to " in city) and unit["transportation"] in ("", "-"):
        return "a travel day without transportation"
    if ("from " not in city and " to " not in city) and unit["attraction"] in ("", "-"):
        return "no attraction"
    if i != q.days - 1 and unit["accommodation"] in ("", "-"):
        return "no accommodation"
    if any(unit[m] in ("", "-") for m in _MEALS) and "from " not in city:
        return "a missing meal"
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
