"""Query specs: who travels where and when, under which local constraints (official level mix)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from agentgym.envs.travelplanner.synthetic._model import World
from agentgym.envs.travelplanner.synthetic._scale import WorldScale
from agentgym.envs.travelplanner.synthetic._vocab import QUERY_CUISINES

LEVELS = ("easy", "medium", "hard")
TRIP_DAYS = (3, 5, 7)
_LOCAL_KINDS = ("house rule", "cuisine", "room type")
_HOUSE_RULE_VALUES = ("smoking", "parties", "children under 10", "visitors", "pets")
_ROOM_TYPE_VALUES = ("entire room", "not shared room", "private room", "shared room")
_ROOM_TYPE_WEIGHTS = (0.5, 0.26, 0.22, 0.02)
_TRANSPORT_VALUES = ("no flight", "no self-driving")
_MEDIUM_PEOPLE = ((2, 3, 4, 5, 6, 7, 8), (0.40, 0.17, 0.13, 0.10, 0.05, 0.08, 0.07))
_HARD_PEOPLE = ((2, 3, 4, 5, 6, 7), (0.72, 0.1, 0.06, 0.04, 0.04, 0.04))

Leg = tuple[int, int, int]  # (day offset, origin city, destination city)


@dataclass
class Spec:
    level: str
    days: int
    org: int
    dest: str
    cities: list[int]
    start: int  # index into world.dates
    people: int
    constraint: dict[str, Any]


def draw_spec(rng: np.random.Generator, world: World, sc: WorldScale, multi_city_states: list[int],
              level: str, days: int) -> Spec:
    k = (days - 1) // 2
    state = multi_city_states[int(rng.integers(len(multi_city_states)))]
    cities = [int(c) for c in rng.permutation(world.cities_in_state[state])[:k]]
    # 3-day trips may start in the destination's state; longer ones start outside it, so
    # the origin is never one of the visited cities.
    outside = [c for c in range(len(world.cities))
               if (c != cities[0] if days == 3 else world.city_state[c] != state)]
    org = outside[int(rng.integers(len(outside)))]
    dest = world.cities[cities[0]] if days == 3 else world.states[state]
    start = int(rng.integers(0, len(world.dates) - days + 1))
    people = _draw_people(rng, level)
    return Spec(level, days, org, dest, cities, start, people, _draw_constraint(rng, sc, level))


def legs(spec: Spec) -> list[Leg]:
    """(day offset, origin, destination) of each travel day."""
    stops = [spec.org, *spec.cities, spec.org]
    offsets = [0, *(2 * i for i in range(1, len(spec.cities))), spec.days - 1]
    return [(t, stops[i], stops[i + 1]) for i, t in enumerate(offsets)]


def city_label(world: World, city: int, spec: Spec) -> str:
    """Plan spelling of a city: state-destination trips suffix "(State)" to visited cities,
    as the official annotated plans do; the origin stays bare."""
    name = world.cities[city]
    if spec.days > 3 and city != spec.org:
        return f"{name}({world.states[world.city_state[city]]})"
    return name


def _draw_people(rng: np.random.Generator, level: str) -> int:
    if level == "easy":
        return 1
    values, p = _MEDIUM_PEOPLE if level == "medium" else _HARD_PEOPLE
    return int(rng.choice(values, p=p))


def _draw_constraint(rng: np.random.Generator, sc: WorldScale, level: str) -> dict[str, Any]:
    """easy: none; medium: one local constraint; hard: three, usually with transportation."""
    c: dict[str, Any] = {"house rule": None, "cuisine": None, "room type": None, "transportation": None}
    if level == "easy":
        return c
    for kind in _constraint_kinds(rng, sc, level):
        c[kind] = _constraint_value(rng, kind, level)
    return c


def _constraint_kinds(rng: np.random.Generator, sc: WorldScale, level: str) -> list[str]:
    if level == "medium":
        return [_LOCAL_KINDS[int(rng.integers(3))]]
    if rng.random() < sc.hard_transport_share:
        return [_LOCAL_KINDS[i] for i in sorted(rng.permutation(3)[:2].tolist())] + ["transportation"]
    return list(_LOCAL_KINDS)


def _constraint_value(rng: np.random.Generator, kind: str, level: str) -> Any:
    if kind == "house rule":
        return _HOUSE_RULE_VALUES[int(rng.integers(len(_HOUSE_RULE_VALUES)))]
    if kind == "cuisine":
        n = 2 if level == "medium" else 4
        return [QUERY_CUISINES[i] for i in rng.permutation(len(QUERY_CUISINES))[:n].tolist()]
    if kind == "room type":
        return str(rng.choice(_ROOM_TYPE_VALUES, p=_ROOM_TYPE_WEIGHTS))
    return _TRANSPORT_VALUES[int(rng.integers(2))]
