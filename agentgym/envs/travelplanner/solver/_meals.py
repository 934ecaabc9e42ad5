"""Meals: the cheapest distinct restaurants per city, with the wanted cuisines covered.

Every full day in a city needs three meals there, all at different restaurants; travel days
need none. Without a cuisine constraint the cheapest choice for ``n`` meals in a city is its
``n`` cheapest restaurants. With one, the meals outside the origin must together serve every
wanted cuisine, which may pay for a dearer restaurant or an *extra* meal on a travel day
(travel days have three free meal slots, each usable in either city of the leg).

This is solved exactly in two steps:

* per city, ``table[n][M]`` = the cheapest set of ``n`` distinct restaurants whose cuisines
  (restricted to the wanted ones) are exactly the set ``M``: a 0/1 knapsack over restaurants
  with states (count, mask). A restaurant is dropped beforehand when ``n_max`` cheaper (or
  equal) ones serve a superset of its cuisines: any set using it leaves one of those unused,
  and swapping it in costs no more and covers no less.
* along the route, a DP over cities with state (covered mask, slots the previous city took
  on the shared travel day) chooses each city's count and mask. Each city fills the free
  slots of the day it arrives before those of the day it leaves, which is never worse for
  the cities after it. A city needs at most ``len(cuisines)`` extra meals in an optimum (one
  per cuisine; any further extra meal can be dropped), which bounds the choices.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from agentgym.envs.travelplanner.solver._problem import Problem

__all__ = ["CityMeals", "RouteMeals", "route_meals", "cuisine_mask", "SLOTS_PER_TRAVEL_DAY"]

SLOTS_PER_TRAVEL_DAY = 3
_INF = math.inf


class RouteMeals(NamedTuple):
    cost: float
    rows: list[list[Any]]  # per city: its restaurants, the mandatory meals first
    extras: list[int]  # per city: how many of them go to travel days


class CityMeals:
    """A city's usable restaurants, cheapest first, with their wanted-cuisine masks."""

    def __init__(self, p: Problem, rows: list[Any]) -> None:
        wanted = p.cuisines
        self.w = len(wanted)
        priced = [(r.average_cost * p.people, cuisine_mask(r, wanted), i, r) for i, r in enumerate(rows)
                  if isinstance(r.average_cost, (int, float)) and math.isfinite(r.average_cost)]
        priced.sort(key=lambda t: (t[0], t[2]))
        self.costs = [t[0] for t in priced]
        self.masks = [t[1] for t in priced]
        self.rows = [t[3] for t in priced]
        self.prefix = [0.0]
        for c in self.costs:
            self.prefix.append(self.prefix[-1] + c)
        self.n_max = 3 * p.stay_days + min(self.w, 2 * SLOTS_PER_TRAVEL_DAY)
        self._layers: list[list[list[float]]] | None = None
        self._cands: list[int] = []
        self._frontiers: dict[int, list[tuple[int, float]]] = {}

    def cheapest(self, n: int) -> float:
        return self.prefix[n] if n < len(self.prefix) else _INF

    def prefix_mask(self, n: int) -> int:
        mask = 0
        for m in self.masks[:n]:
            mask |= m
        return mask

    def table(self) -> list[list[float]]:
        """``table[n][M]`` over all candidates (built on first use)."""
        if self._layers is None:
            self._build()
        return self._layers[-1]

    def frontier(self, n: int) -> list[tuple[int, float]]:
        """The (mask, cost) entries of ``table()[n]`` that no cheaper-or-equal entry covering
        a superset of cuisines dominates, cheapest first."""
        if n not in self._frontiers:
            self._frontiers[n] = _pareto(sorted((v, mask) for mask, v in enumerate(self.table()[n]) if v != _INF))
        return self._frontiers[n]

    def pick(self, n: int, mask: int) -> list[Any]:
        """The restaurants behind ``table()[n][mask]``."""
        layers, chosen = self._layers, []
        for j in range(len(self._cands), 0, -1):
            if n == 0:
                break
            here, before = layers[j][n][mask], layers[j - 1]
            if here == before[n][mask]:
                continue
            i = self._cands[j - 1]
            cost, m = self.costs[i], self.masks[i]
            mask = next(mp for mp in range(len(before[n - 1]))
                        if mp | m == mask and before[n - 1][mp] + cost == here)
            chosen.append(self.rows[i])
            n -= 1
        return chosen[::-1]

    def _build(self) -> None:
        self._cands = self._undominated()
        size, n_max = 1 << self.w, self.n_max
        layer = [[_INF] * size for _ in range(n_max + 1)]
        layer[0][0] = 0.0
        self._layers = [layer]
        for i in self._cands:
            layer = _add(layer, self.costs[i], self.masks[i], n_max)
            self._layers.append(layer)

    def _undominated(self) -> list[int]:
        kept: list[int] = []
        for i, m in enumerate(self.masks):  # cheapest first
            if sum(1 for j in kept if self.masks[j] & m == m) < self.n_max:
                kept.append(i)
        return kept


def _add(layer: list[list[float]], cost: float, m: int, n_max: int) -> list[list[float]]:
    """The knapsack layer after offering one more restaurant (cost, mask ``m``)."""
    out = [row[:] for row in layer]
    for n in range(n_max):
        src, dst = layer[n], out[n + 1]
        for mask, value in enumerate(src):
            if value != _INF:
                v = value + cost
                if v < dst[mask | m]:
                    dst[mask | m] = v
    return out


def cuisine_mask(row: Any, wanted: tuple[str, ...]) -> int:
    text = row.cuisines if isinstance(row.cuisines, str) else ""
    return sum(1 << j for j, c in enumerate(wanted) if c in text)


def route_meals(cities: list[CityMeals], mandatory: list[int]) -> RouteMeals | None:
    """The cheapest meals for a route: ``mandatory[i]`` meals in city ``i`` plus extras on
    travel days, all distinct, covering every wanted cuisine. None when impossible."""
    if any(m > len(c.costs) for c, m in zip(cities, mandatory)):
        return None
    w = cities[0].w if cities else 0
    full = (1 << w) - 1
    simple = sum(c.cheapest(m) for c, m in zip(cities, mandatory))
    covered = 0
    for c, m in zip(cities, mandatory):
        covered |= c.prefix_mask(m)
    if covered == full:  # the cheapest meals already serve every cuisine
        return RouteMeals(simple, [c.rows[:m] for c, m in zip(cities, mandatory)], [0] * len(cities))
    return _covering(cities, mandatory, w)


def _covering(cities: list[CityMeals], mandatory: list[int], w: int) -> RouteMeals | None:
    full = (1 << w) - 1
    states: dict[tuple[int, int], tuple[float, Any]] = {(0, 0): (0.0, None)}
    history = []
    for i, (city, m) in enumerate(zip(cities, mandatory)):
        last = i == len(cities) - 1
        states = _advance(states, city, m, w, last)
        history.append(states)
    finals = [(v[0], key) for key, v in states.items() if key[0] == full]
    if not finals:
        return None
    cost, key = min(finals)
    picks = []
    for i in range(len(cities) - 1, -1, -1):
        _, (prev_mask, prev_spill, n, mask) = history[i][key]
        picks.append((n, mask))
        key = (prev_mask, prev_spill)
    picks.reverse()
    rows = [city.pick(n, mask) for city, (n, mask) in zip(cities, picks)]
    return RouteMeals(cost, rows, [n - m for (n, _), m in zip(picks, mandatory)])


def _advance(states, city: CityMeals, m: int, w: int, last: bool):
    """One city of the route DP: state (covered mask, slots taken on the day it arrives)."""
    out: dict[tuple[int, int], tuple[float, Any]] = {}
    for (covered, spill), (cost, _) in sorted(states.items()):
        free_in = SLOTS_PER_TRAVEL_DAY - spill
        for extra in range(min(w, free_in + SLOTS_PER_TRAVEL_DAY) + 1):
            n = m + extra
            if n > city.n_max:
                break
            spill_out = 0 if last else max(0, extra - free_in)
            for mask, value in city.frontier(n):
                key, total = (covered | mask, spill_out), cost + value
                if key not in out or total < out[key][0]:
                    out[key] = (total, (covered, spill, n, mask))
    return _undominated_states(out)


def _pareto(entries: list[tuple[float, int]]) -> list[tuple[int, float]]:
    kept: list[tuple[int, float]] = []
    for value, mask in entries:  # cheapest first: a kept entry costs no more
        if not any(k & mask == mask for k, _ in kept):
            kept.append((mask, value))
    return kept


def _undominated_states(states: dict) -> dict:
    """Drop a state when another covers a superset, has taken no more slots and costs no more
    (every continuation of the first is open to the second, at no higher cost)."""
    kept: dict = {}
    for key, entry in sorted(states.items(), key=lambda kv: (kv[1][0], kv[0])):
        mask, spill = key
        if not any(k[0] & mask == mask and k[1] <= spill for k in kept):
            kept[key] = entry
    return kept
