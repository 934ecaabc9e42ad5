"""Query specs drawn from a world: who travels where and when, under which local constraints.

The level mix follows the official data: easy = one traveller and no local constraint;
medium = 2-8 travellers and exactly one of house rule, cuisine (two cuisines) or room type;
hard = transportation plus two of the other three (four cuisines when cuisine is one of
them); ``hard_transport_share`` below 1 replaces transportation by the third one in that
share of hard queries, as about 15 % of the official hard queries do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import numpy as np

from agentgym.envs.travelplanner.world.index import index_for
from agentgym.envs.travelplanner.tasks import CUISINES, HOUSE_RULES
from agentgym.envs.travelplanner.solver import writable_city
from agentgym.envs.travelplanner.world import World

__all__ = ["Spec", "Atlas", "draw_spec", "pick", "LEVELS", "TRIP_DAYS", "CITIES_FOR_DAYS"]

LEVELS = ("easy", "medium", "hard")
TRIP_DAYS = (3, 5, 7)
CITIES_FOR_DAYS = {3: 1, 5: 2, 7: 3}
_LOCAL_KINDS = ("house rule", "cuisine", "room type")
_ROOM_TYPES = (("entire room", "not shared room", "private room", "shared room"), (0.5, 0.26, 0.22, 0.02))
_TRANSPORT = ("no flight", "no self-driving")
_PEOPLE = {
    "medium": ((2, 3, 4, 5, 6, 7, 8), (0.40, 0.17, 0.13, 0.10, 0.05, 0.08, 0.07)),
    "hard": ((2, 3, 4, 5, 6, 7, 8), (0.70, 0.10, 0.06, 0.04, 0.04, 0.04, 0.02)),
}
_CUISINES_PER_LEVEL = {"medium": 2, "hard": 4}


@dataclass(frozen=True)
class Spec:
    level: str
    days: int
    org: str
    dest: str  # a city for 3-day trips, else a state
    visiting_city_number: int
    dates: tuple[str, ...]
    people: int
    constraint: dict[str, Any]  # the official local_constraint dict

    @property
    def key(self) -> tuple:
        return (self.org, self.dest, self.dates, self.people, repr(self.constraint))


class Atlas:
    """The cities a generated query may name, by state (only names both evaluators read back)."""

    def __init__(self, world: World) -> None:
        ix = index_for(world)
        self.cities = sorted(c for c in world.state_of if writable_city(c, "both", ix))
        self.state_of = {c: world.state_of[c] for c in self.cities}
        self.in_state: dict[str, list[str]] = {}
        for c in self.cities:
            self.in_state.setdefault(self.state_of[c], []).append(c)
        self.states = sorted(self.in_state)

    def states_with(self, k: int) -> list[str]:
        """States holding at least ``k`` cities and leaving an origin outside them."""
        return [s for s in self.states if len(self.in_state[s]) >= k and len(self.in_state[s]) < len(self.cities)]


def draw_spec(rng: np.random.Generator, atlas: Atlas, level: str, days: int, first: date, n_days: int,
              transport_share: float) -> Spec | None:
    """One random spec, or None when the world has no place for this trip length."""
    k = CITIES_FOR_DAYS[days]
    if days == 3:
        if len(atlas.cities) < 2:
            return None
        dest = pick(rng, atlas.cities)
        org = pick(rng, [c for c in atlas.cities if c != dest])
    else:
        states = atlas.states_with(k)
        if not states:
            return None
        dest = pick(rng, states)
        org = pick(rng, [c for c in atlas.cities if atlas.state_of[c] != dest])
    start = first + timedelta(days=int(rng.integers(0, n_days - days + 1)))
    dates = tuple((start + timedelta(days=i)).isoformat() for i in range(days))
    return Spec(level, days, org, dest, k, dates, _people(rng, level), _constraint(rng, level, transport_share))


def pick(rng: np.random.Generator, items: Sequence[str]) -> str:
    """One of ``items``, drawn with ``rng``."""
    return items[int(rng.integers(len(items)))]


def _people(rng: np.random.Generator, level: str) -> int:
    if level == "easy":
        return 1
    values, p = _PEOPLE[level]
    return int(rng.choice(values, p=p))


def _constraint(rng: np.random.Generator, level: str, transport_share: float) -> dict[str, Any]:
    c: dict[str, Any] = {"house rule": None, "cuisine": None, "room type": None, "transportation": None}
    if level == "easy":
        return c
    if level == "medium":
        kinds = [_LOCAL_KINDS[int(rng.integers(3))]]
    elif rng.random() < transport_share:
        kinds = [_LOCAL_KINDS[i] for i in sorted(rng.permutation(3)[:2].tolist())] + ["transportation"]
    else:
        kinds = list(_LOCAL_KINDS)
    for kind in kinds:
        c[kind] = _value(rng, kind, level)
    return c


def _value(rng: np.random.Generator, kind: str, level: str) -> Any:
    if kind == "house rule":
        return HOUSE_RULES[int(rng.integers(len(HOUSE_RULES)))]
    if kind == "cuisine":
        return [CUISINES[i] for i in rng.permutation(len(CUISINES))[:_CUISINES_PER_LEVEL[level]].tolist()]
    if kind == "room type":
        values, p = _ROOM_TYPES
        return str(rng.choice(values, p=p))
    return _TRANSPORT[int(rng.integers(len(_TRANSPORT)))]
