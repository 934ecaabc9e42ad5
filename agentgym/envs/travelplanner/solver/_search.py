"""Branch and bound over routes, stay lengths and transport regimes.

A plan's shape is fixed by the regime, the ordered cities ``c1..ck`` and the number of full
days ``s_i`` spent in each (``sum s_i = days - k - 1``; the travel days fall in between). Given
the shape, everything else separates: each leg takes its cheapest option in the regime, each
city its cheapest admissible hotel for ``s_i + 1`` nights, and the meals are the exact DP of
``_meals`` (without a cuisine constraint: each city's ``3 s_i`` cheapest restaurants).

The search is a depth-first walk choosing ``(c_i, s_i)`` city by city, children cheapest
first. A node's bound is its exact cost so far (legs and hotels, plus the cheapest meals
ignoring cuisines) plus an admissible bound on the rest: the cheapest middle leg for each city
still to choose, the cheapest way home, and the cheapest stays of the remaining length over
any cities (distinctness relaxed). A node is cut when its bound exceeds the budget or reaches
the best plan found, so an exhausted search proves the optimum (or that nothing fits).
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

from agentgym.envs.travelplanner.solver._meals import RouteMeals, route_meals
from agentgym.envs.travelplanner.solver._problem import Problem
from agentgym.envs.travelplanner.solver._stays import CityStay
from agentgym.envs.travelplanner.solver._transport import REGIMES, Legs

__all__ = ["Search", "Shape"]

_CHECK_EVERY = 256
_MAX_BOUND_CITIES = 40


class Shape(NamedTuple):
    """The best plan's skeleton: the rest is rebuilt from it deterministically."""

    regime: str
    cities: tuple[str, ...]
    stays: tuple[int, ...]
    cost: float
    meals: RouteMeals | None


class _Stop(Exception):
    pass


class Search:
    def __init__(self, p: Problem, *, time_limit: float | None, node_limit: int | None) -> None:
        self.p = p
        self.legs = Legs(p)
        self.stays = {c: CityStay(p, c) for c in p.candidates}
        self.best: Shape | None = None
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit
        self.node_limit = node_limit
        self.nodes = self.leaves = self.cut = self.over_budget = self.uncovered = 0
        self.stopped = False
        self._regime = REGIMES[0]
        self._rest: list[list[float]] = []
        self._parts: dict[str, tuple] = {}

    @property
    def best_cost(self) -> float:
        return math.inf if self.best is None else self.best.cost

    def run(self) -> None:
        """Search every regime (cheapest bound first) until exhausted or stopped."""
        bounds = sorted((self._prepare(r), i, r) for i, r in enumerate(REGIMES) if self.legs.allowed(r))
        try:
            for bound, _, regime in bounds:
                if self._prunable(bound):
                    self.cut += 1
                    continue
                self._regime = regime
                self._rest = self._rest_bounds(*self._parts[regime])
                self._walk(0, self.p.org, 0, (), (), 0.0, 0.0)
        except _Stop:
            self.stopped = True

    # -- the walk ----------------------------------------------------------------------------
    def _walk(self, i: int, prev: str, day: int, cities: tuple, stays: tuple, cost: float, meal_lb: float) -> None:
        self._tick()
        left = self.p.stay_days - sum(stays)
        for bound, c, s, child, child_meals in self._children(i, prev, day, cities, left, cost, meal_lb):
            if self._prunable(bound):
                self.cut += 1
                break
            if i == self.p.k - 1:
                self._leaf(cities + (c,), stays + (s,), child, child_meals)
            else:
                self._walk(i + 1, c, day + s + 1, cities + (c,), stays + (s,), child, child_meals)

    def _children(self, i: int, prev: str, day: int, cities: tuple, left: int, cost: float,
                  meal_lb: float) -> list[tuple[float, str, int, float, float]]:
        """(bound, city, full days, exact cost so far, meals' share of it), best bound first."""
        p, last = self.p, i == self.p.k - 1
        out = []
        for order, c in enumerate(p.candidates):
            if c in cities:
                continue
            leg = self.legs.best(prev, c, day, self._regime)
            home = self.legs.best(c, p.org, p.days - 1, self._regime) if last else None
            if leg is None or (last and home is None):
                continue
            for s in ([left] if last else range(left + 1)):
                stay = self.stays[c].stay_bound(s)
                if stay == math.inf:
                    continue
                child = cost + leg.cost + stay + (home.cost if last else 0.0)
                bound = child + (0.0 if last else self._rest[p.k - i - 1][left - s])
                out.append((bound, order, s, c, child, meal_lb + self.stays[c].meals.cheapest(3 * s)))
        out.sort(key=lambda t: t[:3])
        return [(b, c, s, child, m) for b, _, s, c, child, m in out]

    def _leaf(self, cities: tuple, stays: tuple, cost: float, meal_lb: float) -> None:
        self.leaves += 1
        meals = None
        if self.p.cuisines:
            meals = route_meals([self.stays[c].meals for c in cities], [3 * s for s in stays])
            if meals is None:
                self.uncovered += 1
                return
            cost = cost - meal_lb + meals.cost
        if cost > self.p.budget:
            self.over_budget += 1
        elif cost < self.best_cost:
            self.best = Shape(self._regime, cities, stays, cost, meals)

    # -- bounds ------------------------------------------------------------------------------
    def _prunable(self, bound: float) -> bool:
        if bound > self.p.budget:
            self.over_budget += bound < math.inf  # a real plan shape, only too dear
            return True
        return bound >= self.best_cost

    def _prepare(self, regime: str) -> float:
        """A lower bound on any plan in the regime (inf when some leg can never be travelled)."""
        p = self.p
        best_stay = [min((st.stay_bound(s) for st in self.stays.values()), default=math.inf)
                     for s in range(p.stay_days + 1)]
        middle = self._cheapest_middle_leg(regime) if p.k > 1 else 0.0
        home = min((self._leg_cost(c, p.org, p.days - 1, regime) for c in p.candidates), default=math.inf)
        spread = _spread(best_stay, p.k)
        self._parts[regime] = (middle, home, spread)
        first = min((self._leg_cost(p.org, c, 0, regime) for c in p.candidates), default=math.inf)
        return first + (p.k - 1) * middle + home + spread[p.k][p.stay_days]

    def _rest_bounds(self, middle: float, home: float, spread: list[list[float]]) -> list[list[float]]:
        """``rest[r][R]``: a lower bound on finishing the trip with ``r`` cities still to choose
        and ``R`` full days left for them (their incoming legs, the way home, their stays)."""
        return [[(r * middle + home if r else 0.0) + spread[r][R] for R in range(self.p.stay_days + 1)]
                for r in range(self.p.k + 1)]

    def _cheapest_middle_leg(self, regime: str) -> float:
        p = self.p
        if len(p.candidates) > _MAX_BOUND_CITIES:
            return 0.0  # too many pairs to scan; zero is still a valid bound
        return min((self._leg_cost(a, b, t, regime) for a in p.candidates for b in p.candidates
                    if a != b for t in range(1, p.days - 1)), default=math.inf)

    def _leg_cost(self, a: str, b: str, day: int, regime: str) -> float:
        leg = self.legs.best(a, b, day, regime)
        return math.inf if leg is None else leg.cost

    def _tick(self) -> None:
        self.nodes += 1
        if self.node_limit is not None and self.nodes > self.node_limit:
            raise _Stop
        if self.deadline is not None and self.nodes % _CHECK_EVERY == 0 and time.perf_counter() > self.deadline:
            raise _Stop


def _spread(best_stay: list[float], k: int) -> list[list[float]]:
    """``out[r][R]``: the cheapest sum of ``r`` stays with ``R`` full days between them."""
    n = len(best_stay)
    out = [[0.0] + [math.inf] * (n - 1)]
    for _ in range(k):
        prev = out[-1]
        out.append([min((prev[R - s] + best_stay[s] for s in range(R + 1)), default=math.inf) for R in range(n)])
    return out
