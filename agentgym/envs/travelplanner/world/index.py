"""Per-world lookup structures for the evaluator, built lazily and memoized.

The official evaluator filters whole tables for every lookup (``Name`` *contains* the name and
``City`` equals the city). Here each (table, city) gets, on first use, one string holding the
city's names joined by NUL, so a substring lookup is one or two ``str.find`` calls; results are
memoized per (table, city, name). Strict lookups use a dict from normalized name to rows.

Caches live in a ``weakref.WeakKeyDictionary`` keyed by the :class:`World` (worlds are
immutable), so they go away with the world. Every memo keyed by plan text is bounded in bytes
(``agentgym._memo``); a full one drops its older half.
"""

from __future__ import annotations

import bisect
import math
import weakref
from typing import Any

from agentgym._memo import Memo
from agentgym.envs.travelplanner._plan_text import before_paren, name_city, norm
from agentgym.envs.travelplanner.world._database import Flight, World

__all__ = ["WorldIndex", "index_for", "TABLES"]

TABLES = ("restaurants", "attractions", "accommodations")
_MEMO_BYTES = 16 << 20
"""Bytes each memo of a world's index may hold."""
_TEXT_ENTRY_BYTES = 8192
"""Largest entry of a memo keyed by plan text: longer texts are looked up each time."""
_INDEXES: weakref.WeakKeyDictionary[World, WorldIndex] = weakref.WeakKeyDictionary()


def index_for(world: World) -> WorldIndex:
    ix = _INDEXES.get(world)
    if ix is None:
        ix = _INDEXES[world] = WorldIndex(world)
    return ix


class _CityNames:
    """The names of one table's rows in one city, joined for fast substring search."""

    __slots__ = ("rows", "joined", "starts")

    def __init__(self, rows: tuple[Any, ...]) -> None:
        self.rows = rows
        names = [str(r.name) for r in rows]
        self.joined = "\x00".join(names)
        self.starts, pos = [], 0
        for n in names:
            self.starts.append(pos)
            pos += len(n) + 1

    def contains(self, name: str) -> tuple[Any | None, bool]:
        """(first row whose name contains ``name``, whether exactly one row does)."""
        if not self.rows:  # a city without rows matches nothing, even the empty name
            return None, False
        if "\x00" in name:  # cannot use the joined string; scan
            hits = [r for r in self.rows if name in str(r.name)]
            return (hits[0] if hits else None), len(hits) == 1
        pos = self.joined.find(name)
        if pos < 0:
            return None, False
        i = bisect.bisect_right(self.starts, pos) - 1
        nxt = i + 1
        if nxt >= len(self.starts):
            return self.rows[i], True
        return self.rows[i], self.joined.find(name, self.starts[nxt]) < 0


class WorldIndex:
    """Memoized lookups over one world, shaped for the two evaluators."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._names: dict[tuple[str, str], _CityNames] = {}
        self._contains = Memo(_MEMO_BYTES, _TEXT_ENTRY_BYTES)
        self._venues = {t: Memo(_MEMO_BYTES, _TEXT_ENTRY_BYTES) for t in TABLES}
        self._exact: dict[tuple[str, str], dict[str, Any]] = {}
        self._flights = Memo(_MEMO_BYTES)
        self._routes = Memo(_MEMO_BYTES)
        self._costs = Memo(_MEMO_BYTES, _TEXT_ENTRY_BYTES)
        self.memo: dict[str, Memo] = {k: Memo(_MEMO_BYTES, _TEXT_ENTRY_BYTES)
                                      for k in ("sandbox_transport", "transport_cost", "venue")}
        cities = set(world.state_of) | set(world.city_set)
        self._canon_city = {norm(c): c for c in sorted(cities)}
        self._canon_state = {norm(s): s for s in sorted(set(world.state_of.values()) | set(world.states))}

    # -- official: substring name + exact city, first row -----------------------------------
    def contains(self, table: str, city: str, name: str) -> tuple[Any | None, bool]:
        """The official lookup: (first row of ``city`` whose name contains ``name``, exactly one?)."""
        key = (table, city, name)
        hit = self._contains.get(key)
        if hit is None:
            hit = self._contains.put(key, self._city_names(table, city).contains(name))
        return hit

    def venue(self, table: str, text: Any) -> tuple[Any | None, bool]:
        """``contains`` on the official ``"Name, City"`` split of ``text`` (memoized per text)."""
        if type(text) is not str:
            name, city = name_city(text)  # raises like upstream
            return self.contains(table, city, name)
        memo = self._venues[table]  # one dict per table: no key tuple per call
        hit = memo.get(text)
        if hit is None:
            name, city = name_city(text)
            # The per-text memo suffices here; skipping ``contains``'s memo saves a key and an insert.
            hit = memo.put(text, self._city_names(table, city).contains(name))
        return hit

    def _city_names(self, table: str, city: str) -> _CityNames:
        names = self._names.get((table, city))
        if names is None:
            names = self._names[(table, city)] = _CityNames(getattr(self.world, table)(city))
        return names

    def flights_by_number(self, number: str) -> list[Flight]:
        rows = self._flights.get(number)
        if rows is None:
            rows = self._flights.put(number, self.world.flights_by_number(number))
        return rows

    def flight_routes(self, number: str) -> list[tuple[Any, str, str]]:
        """``(price, origin, dest)`` of each row of ``flights_by_number`` (all the official evaluator reads)."""
        rows = self._routes.get(number)
        if rows is None:
            rows = self._routes.put(number, self.world.flight_price_routes(number))
        return rows

    def drive_cost(self, origin: Any, dest: Any, mode: str) -> Any:
        """The official distance-matrix cost: None when the pair is missing, incomplete or >= 1 day."""
        key = (origin, dest, mode)
        if key in self._costs:
            return self._costs[key]
        origin, dest = before_paren(origin), before_paren(dest)
        row = self.world.distance(origin, dest)
        cost = None
        if row is not None and row.duration is not None and row.distance is not None and "day" not in row.duration:
            km = _number(row.distance.replace("km", "").replace(",", ""))
            if "driving" in mode:
                cost = int(km * 0.05)
            elif mode == "taxi":
                cost = int(km)
        return self._costs.put(key, cost)

    # -- strict: exact (normalized) names and cities ----------------------------------------
    def canon_city(self, text: str) -> str | None:
        """The database spelling of a city name given in any case/spacing, or None."""
        return self._canon_city.get(norm(text))

    def canon_state(self, text: str) -> str | None:
        return self._canon_state.get(norm(text))

    def exact(self, table: str, city: str, name: str) -> Any | None:
        """The first row of ``city`` (database spelling) whose normalized name equals ``name``'s."""
        names = self._exact.get((table, city))
        if names is None:
            names = {}
            for row in getattr(self.world, table)(city):
                names.setdefault(norm(str(row.name)), row)
            self._exact[(table, city)] = names
        return names.get(norm(name))

    def strict_flight(self, number: str, origin: str, dest: str, date: str | None) -> Flight | None:
        for f in self.flights_by_number(number):
            if f.origin == origin and f.dest == dest and (date is None or f.date == date):
                return f
        return None

    def remember(self, kind: str, key: Any, value: Any) -> Any:
        """Store ``value`` in the bounded memo ``kind`` (results of pure per-text computations)."""
        return self.memo[kind].put(key, value)

    def clear(self) -> None:
        """Drop every memoized lookup (the joined name strings are kept)."""
        self._contains.clear()
        for memo in self._venues.values():
            memo.clear()
        self._flights.clear()
        self._routes.clear()
        self._costs.clear()
        for table in self.memo.values():
            table.clear()


def _number(text: str) -> float | int:
    text = text.strip()
    return int(text) if text.isdigit() else float(text)


def ceil_div(people: Any, capacity: Any) -> int:
    """``math.ceil(people * 1.0 / capacity)`` as the official cost does (raises on capacity 0)."""
    return math.ceil(people * 1.0 / capacity)
