"""The TravelPlanner tools, with the official semantics and message strings.

Each tool is a small function of the world and its string arguments returning a
``ToolResult`` whose ``content`` is what the official agent would observe. Successful results are
memoised per tool and arguments: the world is read-only, and GRPO-style training replays the
same queries many times, so the same lookups recur. The memo is bounded in bytes and keeps only
results whose arguments the world has; failed lookups (whose arguments are whatever the model
wrote) are not kept.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import partial
from typing import Any

from agentgym._memo import memoize
from agentgym.core.tools import Param, Tool, ToolBox
from agentgym.core.types import ErrorCode, ToolResult
from agentgym.envs.travelplanner.world import Flight, World
from agentgym.envs.travelplanner.world import render_table

__all__ = ["make_toolbox", "search_tools", "TOOLS", "SEARCH_TOOLS", "NOTEBOOK_TOOL", "distance_cost", "Notebook", "strip_state",
           "CACHE_BYTES"]

CACHE_BYTES = 8 << 20
"""Bytes of results each search tool of a world keeps (one entry at most 1/64 of it)."""
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_PARENTHESISED = re.compile(r"\([^)]*\)")


def strip_state(city: str) -> str:
    """``Abilene(Texas)`` -> ``Abilene``: every official lookup drops a parenthesised suffix."""
    return _drop_parenthesised(city).strip() if "(" in city else city


def _drop_parenthesised(text: str) -> str:
    """``re.sub(r"\\(.*?\\)", "", text)`` in linear time (the pattern is quadratic on ``"(" * n``):
    on each line, every ``(`` up to the first ``)`` after it is removed."""
    if "\n" in text:
        return "\n".join(_drop_parenthesised(line) if ")" in line else line for line in text.split("\n"))
    # Before the last ")", every "(" has a ")" after it, so each attempt of the pattern succeeds.
    last = text.rfind(")") + 1
    return _PARENTHESISED.sub("", text[:last]) + text[last:]


def distance_cost(mode: str, distance_km: float) -> int | None:
    """The official cost rule: 5 cents per km when driving, 1 dollar per km by taxi."""
    if "driving" in mode:
        return int(distance_km * 0.05)
    if mode == "taxi":
        return int(distance_km)
    return None


def _ok(content: str, n_rows: int = 0) -> ToolResult:
    return ToolResult(content=content, n_rows=n_rows)


def _fail(content: str) -> ToolResult:
    return ToolResult(content=content, error=ErrorCode.INVALID_ARGUMENT)


def _table(row_type: Any, rows: Any) -> ToolResult:
    return _ok(render_table(row_type.COLUMNS, rows), len(rows))


def _invalid_city(world: World, city: str) -> ToolResult | None:
    if city in world.city_set:
        return None
    return _fail(f"{city} is not valid city in {list(world.cities)}.")


# -- the tools -------------------------------------------------------------------------------
def flight_search(world: World, origin: str, destination: str, date: str) -> ToolResult:
    if not _DATE.match(date):
        return _fail(f"'{date}' is not in the format YYYY-MM-DD")
    for city in (origin, destination):
        if (bad := _invalid_city(world, city)) is not None:
            return bad
    rows = world.flights(origin, destination, date)
    if not rows:
        return _ok(f"There is no flight from {origin} to {destination} on {date}.")
    return _table(Flight, rows)


def _city_search(world: World, city: str, *, table: str, empty: str) -> ToolResult:
    if (bad := _invalid_city(world, city)) is not None:
        return bad
    text = world.city_table(table, city)
    return _ok(empty) if text is None else _ok(text, text.count("\n"))


def city_search(world: World, state: str) -> ToolResult:
    cities = world.cities_in_state(state)
    # Official quirk: the tool *returns* a ValueError, which is printed, so it is not an error.
    return _ok("Invalid State") if cities is None else _ok(str(list(cities)), len(cities))


def distance_matrix(world: World, origin: str, destination: str, mode: str) -> ToolResult:
    origin, destination = strip_state(origin), strip_state(destination)
    row = world.distance(origin, destination)
    if row is None:
        return _ok(f"{mode}, from {origin} to {destination}, no valid information.")
    if row.duration is None or row.distance is None or "day" in row.duration:
        return _ok("No valid information.")
    try:
        km = float(row.distance.replace("km", "").replace(",", "").strip())
    except ValueError:
        return _ok("No valid information.")
    cost = distance_cost(mode, km)
    return _ok(f"{mode}, from {origin} to {destination}, duration: {row.duration}, "
               f"distance: {row.distance}, cost: {cost}", 1)


class Notebook:
    """Per-episode store of search results, as the official NotebookWrite keeps them."""

    def __init__(self) -> None:
        self.entries: list[dict[str, str]] = []
        self.last_result: str | None = None

    def remember(self, tool: Tool, result: ToolResult) -> None:
        # CitySearch never becomes "the last result" in the official agent.
        if tool.action not in ("CitySearch", "NotebookWrite"):
            self.last_result = result.content

    def write(self, description: str) -> ToolResult:
        self.entries.append({"Short Description": description, "Content": str(self.last_result)})
        return _ok(f"The information has been recorded in Notebook, and its index is {len(self.entries) - 1}.")

    @property
    def tool(self) -> Tool:
        """NotebookWrite, writing into this notebook."""
        return replace(NOTEBOOK_TOOL, run=self.write)


# -- the declarations: each ``run`` takes what it reads first (the world, the notebook) --
_CITY = (Param("city", "City", "City name"),)
SEARCH_TOOLS: tuple[Tool, ...] = (
    Tool("search_flights", "FlightSearch", "Flights from one city to another on a date.",
         (Param("origin", "Departure City", "Departure city, e.g. New York"),
          Param("destination", "Destination City", "Destination city"),
          Param("date", "Date", "Departure date as YYYY-MM-DD")),
         flight_search),
    Tool("search_accommodations", "AccommodationSearch", "Accommodations in a city.", _CITY,
         partial(_city_search, table="accommodations", empty="There is no attraction in this city.")),  # official
    Tool("search_restaurants", "RestaurantSearch", "Restaurants in a city.", _CITY,
         partial(_city_search, table="restaurants", empty="There is no restaurant in this city.")),
    Tool("search_attractions", "AttractionSearch", "Attractions in a city.", _CITY,
         partial(_city_search, table="attractions", empty="There is no attraction in this city.")),
    Tool("search_cities", "CitySearch", "Cities of a state.",
         (Param("state", "State", "State name, e.g. Texas"),),
         city_search),
    Tool("distance_matrix", "GoogleDistanceMatrix",
         "Duration, distance and cost of driving between two cities.",
         (Param("origin", "Origin", "Origin city"),
          Param("destination", "Destination", "Destination city"),
          Param("mode", "Mode", "Travel mode", enum=("self-driving", "taxi"))),
         distance_matrix),
)
NOTEBOOK_TOOL = Tool("notebook_write", "NotebookWrite",
                     "Store the last search result in the notebook under a short description.",
                     (Param("description", "Short Description", "Short description of the stored result"),),
                     Notebook.write)
TOOLS: tuple[Tool, ...] = (*SEARCH_TOOLS, NOTEBOOK_TOOL)
"""The seven tools as declared, in the order the prompt lists them (unbound: use ``make_toolbox``)."""


def search_tools(world: World) -> tuple[Tool, ...]:
    """The six searches bound to ``world``, each with its own result cache (successes only)."""
    return tuple(replace(tool, run=memoize(CACHE_BYTES, keep=_KEEP.get(tool.action, _valid))(partial(tool.run, world)))
                 for tool in SEARCH_TOOLS)


def _valid(result: ToolResult) -> bool:
    """A result without an error: the tool checked its arguments against the world (cities, dates)."""
    return result.error is None


def _found(result: ToolResult) -> bool:
    """For tools that answer any argument without an error ("Invalid State", "no valid information"),
    only results that found rows: their arguments are names the world has."""
    return result.error is None and result.n_rows > 0


# Only results keyed by what the world has are kept, so the keys are bounded by the world, never by
# what the model writes; the misses cost little to redo.
_KEEP = {"CitySearch": _found, "GoogleDistanceMatrix": _found}


def make_toolbox(world: World, notebook: Notebook | None = None) -> ToolBox:
    """The seven TravelPlanner tools: the searches bound to ``world``, NotebookWrite to ``notebook``
    (a new one when None)."""
    return ToolBox([*search_tools(world), (Notebook() if notebook is None else notebook).tool])
