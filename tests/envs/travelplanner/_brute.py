"""A brute-force reference for the solver's optimum, written independently of the solver.

It enumerates every route, every split of the days, every transport option of every leg
(with the conflict and transportation rules), every accommodation *and every split of a
city's nights between two listings*, and every subset of each city's restaurants, straight
from the world's tables. Only for small worlds (the tiny synthetic preset). Strict-mode
semantics on worlds whose venue names are unique and substring-free.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations, permutations, product

from agentgym.envs.travelplanner.evaluation import RULE_TEXT, room_type_ok
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.world import World

INF = math.inf


def brute_cheapest(q: TravelTask, world: World) -> float:
    """The cheapest cost of any plan passing strict evaluation, ignoring the budget (inf if none)."""
    k, days = q.visiting_city_number, q.days
    if days == 3 or k == 1:
        cities = [q.dest] if q.dest != q.org else []
    else:
        cities = sorted(c for c, s in world.state_of.items() if s == q.dest and c != q.org)
    meals = _MealTables(q, world)
    best = INF
    for route in permutations(cities, k):
        for split in _compositions(days - k - 1, k):
            if any(len(world.attractions(c)) < s for c, s in zip(route, split)):
                continue
            travel = [0]
            for s in split:
                travel.append(travel[-1] + s + 1)
            stops = [q.org, *route, q.org]
            legs = [(stops[j], stops[j + 1], q.date[travel[j]]) for j in range(k + 1)]
            cost = _transport(q, world, legs) + sum(_hotel(q, world, c, s + 1) for c, s in zip(route, split))
            if cost < best:
                best = min(best, cost + meals.cheapest(route, split))
    return best


def _compositions(total: int, parts: int):
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def _km(world: World, a: str, b: str) -> float | None:
    row = world.distance(a, b)
    if row is None or row.duration is None or row.distance is None or "day" in row.duration:
        return None
    return float(row.distance.replace("km", "").replace(",", "").strip())


def _leg_options(q: TravelTask, world: World, a: str, b: str, date: str) -> list[tuple[str, float]]:
    p, rule = q.people_number, q.local_constraint.transportation
    options = []
    km = _km(world, a, b)
    if km is not None:
        if rule != "no self-driving":
            options.append(("self-driving", int(km * 0.05) * math.ceil(p / 5)))
        options.append(("taxi", int(km) * math.ceil(p / 4)))
    if rule != "no flight":
        options += [("flight", f.price * p) for f in world.flights(a, b, date)]
    return options


def _transport(q: TravelTask, world: World, legs) -> float:
    best = INF
    for combo in product(*(_leg_options(q, world, *leg) for leg in legs)):
        modes = {m for m, _ in combo}
        if "self-driving" in modes and modes & {"flight", "taxi"}:
            continue
        best = min(best, sum(c for _, c in combo))
    return best


def _hotel(q: TravelTask, world: World, city: str, nights: int) -> float:
    """One listing for every night, or two listings splitting the nights."""
    banned = RULE_TEXT.get(q.local_constraint.house_rule or "")
    wanted = q.local_constraint.room_type
    ok = [h for h in world.accommodations(city)
          if (banned is None or banned not in h.house_rules) and (wanted is None or room_type_ok(wanted, h.room_type))]
    unit = [(h.price * math.ceil(q.people_number / h.maximum_occupancy), h.minimum_nights) for h in ok]
    best = min((u * nights for u, m in unit if m <= nights), default=INF)
    for first in range(1, nights):
        for (u1, m1), (u2, m2) in permutations(unit, 2):
            if m1 <= first and m2 <= nights - first:
                best = min(best, u1 * first + u2 * (nights - first))
    return best


class _MealTables:
    """Per city and number of meals, the cheapest cost of each set of wanted cuisines."""

    def __init__(self, q: TravelTask, world: World) -> None:
        self.q, self.world = q, world
        self.wanted = list(dict.fromkeys(q.local_constraint.cuisine or ()))
        self.full = (1 << len(self.wanted)) - 1
        self.table = lru_cache(maxsize=None)(self._table)

    def _table(self, city: str, n: int) -> dict[int, float]:
        people = self.q.people_number
        rows = [(r.average_cost * people, sum(1 << j for j, c in enumerate(self.wanted) if c in r.cuisines))
                for r in self.world.restaurants(city)]
        out: dict[int, float] = {}
        for subset in combinations(rows, n):
            mask = 0
            for _, m in subset:
                mask |= m
            out[mask] = min(out.get(mask, INF), sum(c for c, _ in subset))
        return out

    def cheapest(self, route, split) -> float:
        mandatory = [3 * s for s in split]
        extra_cap = min(len(self.wanted), 6)
        best = INF
        for extras in product(range(extra_cap + 1), repeat=len(route)):
            if not _slots_fit(extras):
                continue
            tables = [self.table(c, m + e) for c, m, e in zip(route, mandatory, extras)]
            for masks in product(*(list(t) for t in tables)):
                union = 0
                for m in masks:
                    union |= m
                if union == self.full:
                    best = min(best, sum(t[m] for t, m in zip(tables, masks)))
        return best


def _slots_fit(extras) -> bool:
    """Whether each city's extra meals fit on its arrival and leaving days (3 slots a day)."""
    k = len(extras)
    for arriving in product(*(range(min(e, 3) + 1) for e in extras)):
        leaving = [e - a for e, a in zip(extras, arriving)]
        # travel day j touches city j-1 (leaving) and city j (arriving)
        loads = [(leaving[j - 1] if j > 0 else 0) + (arriving[j] if j < k else 0) for j in range(k + 1)]
        if all(x <= 3 for x in leaving) and all(x <= 3 for x in loads):
            return True
    return False
