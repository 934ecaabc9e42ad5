"""The cheapest way to travel one leg on one day, in each transport regime.

The commonsense rule forbids self-driving next to a flight or a taxi anywhere in the trip, so a
plan is either driven throughout (regime ``self-driving``) or flies and takes taxis (regime
``flight/taxi``). Within a regime the legs are independent: the cheapest plan takes the
cheapest allowed option on every leg. Costs are the group's, as ``valid_cost`` computes them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from agentgym.envs.travelplanner._plan_text import mode_of
from agentgym.envs.travelplanner.solver._problem import Problem

__all__ = ["Move", "Legs", "REGIMES"]

DRIVE, AIR = "self-driving", "flight/taxi"
REGIMES = (DRIVE, AIR)
_LABEL = {"flight": "Flight", "self-driving": "Self-driving", "taxi": "Taxi"}


class Move(NamedTuple):
    kind: str  # "flight" | "self-driving" | "taxi"
    text: str  # the plan's transportation entry
    cost: float  # for the whole group


class Legs:
    """Memoised ``best(origin, destination, day, regime)``."""

    def __init__(self, problem: Problem) -> None:
        self.p = problem
        self._memo: dict[tuple[str, str, int, str], Move | None] = {}
        self.lookups = 0

    def allowed(self, regime: str) -> bool:
        banned = self.p.banned_transport
        return not (regime == DRIVE and banned == "self-driving")

    def best(self, a: str, b: str, day: int, regime: str) -> Move | None:
        key = (a, b, day if regime == AIR else -1, regime)
        try:
            return self._memo[key]
        except KeyError:
            pass
        self.lookups += 1
        if regime == DRIVE:
            found = self._ground(a, b, "self-driving") if self.allowed(DRIVE) else None
        else:
            options = [self._flight(a, b, day), self._ground(a, b, "taxi")]
            found = min((m for m in options if m is not None), key=lambda m: m.cost, default=None)
        self._memo[key] = found
        return found

    def _ground(self, a: str, b: str, mode: str) -> Move | None:
        unit = self.p.ix.drive_cost(a, b, mode)
        if unit is None:
            return None
        row = self.p.world.distance(a, b)
        text = (f"{_LABEL[mode]}, from {a} to {b}, duration: {row.duration}, "
                f"distance: {row.distance}, cost: {unit}")
        per_vehicle = 5 if mode == "self-driving" else 4
        return self._checked(mode, text, unit * math.ceil(self.p.people / per_vehicle))

    def _flight(self, a: str, b: str, day: int) -> Move | None:
        date = self.p.date(day)
        if date is None or self.p.banned_transport == "flight":
            return None
        best: Move | None = None
        for number in sorted({f.number for f in self.p.world.flights(a, b, date)}):
            price = self._price(number, a, b, date)
            if price is None:
                continue
            row = self.p.ix.strict_flight(number, a, b, date)
            text = (f"Flight Number: {number}, from {a} to {b}, "
                    f"Departure Time: {row.dep_time}, Arrival Time: {row.arr_time}")
            move = self._checked("flight", text, price * self.p.people)
            if move is not None and (best is None or move.cost < best.cost):
                best = move
        return best

    def _price(self, number: str, a: str, b: str, date: str) -> float | None:
        """The price the strict evaluator charges (the row matching number, route and date); in
        with ``must_pass="both"`` also the official one (the first row with that number), which must agree."""
        row = self.p.ix.strict_flight(number, a, b, date)
        if row is None or not isinstance(row.price, (int, float)) or row.price != row.price:
            return None
        if self.p.must_pass == "both" and self.p.ix.flights_by_number(number)[0].price != row.price:
            return None
        return row.price

    def _checked(self, kind: str, text: str, cost: float) -> Move | None:
        """The entry must read back as its own mode and must not name a banned mode."""
        banned = self.p.banned_transport
        # (The strict test is case-insensitive, so it also covers the official case-sensitive one.)
        if mode_of(text) != _LABEL[kind] or (banned is not None and banned in text.lower()):
            return None
        return Move(kind, text, cost)
