"""Where the world is: which states, how many cities in each, their positions and names."""

from __future__ import annotations

import math

import numpy as np

from agentgym.envs.travelplanner.synthetic._scale import WorldScale
from agentgym.envs.travelplanner.synthetic._vocab import CITY_ENDINGS, CITY_FORMS, CITY_STEMS, STATES

KM_PER_DEG_LAT = 110.57
KM_PER_DEG_LON = 111.32 * math.cos(math.radians(38.5))  # equirectangular at mid-US latitude


def pick_states(rng: np.random.Generator, n: int) -> list[int]:
    """A random state and its n-1 nearest neighbours: small worlds stay regional (drivable)."""
    xy = np.array([[s[3] * KM_PER_DEG_LON, s[2] * KM_PER_DEG_LAT] for s in STATES])
    seed_state = int(rng.integers(len(STATES)))
    order = np.argsort(np.hypot(*(xy - xy[seed_state]).T), kind="stable")
    return [int(i) for i in order[:n]]


def cities_per_state(rng: np.random.Generator, sc: WorldScale, states: list[int]) -> np.ndarray:
    """min_cities_per_state each, the rest spread in proportion to state size (with noise)."""
    spread = np.array([STATES[s][4] for s in states], dtype=float)
    weight = spread**1.5 * rng.lognormal(0.0, 0.4, len(states))
    extra = rng.multinomial(sc.n_cities - sc.min_cities_per_state * len(states), weight / weight.sum())
    return extra + sc.min_cities_per_state


def place_cities(rng: np.random.Generator, states: list[int], counts: np.ndarray) -> np.ndarray:
    """City (x, y) in km: scattered around each state's centroid, at least 15 km apart."""
    placed: list[tuple[float, float]] = []
    for s, count in zip(states, counts):
        _, _, lat, lon, spread = STATES[s]
        cx, cy = lon * KM_PER_DEG_LON, lat * KM_PER_DEG_LAT
        for _ in range(int(count)):
            placed.append(_free_spot(rng, cx, cy, spread, placed))
    return np.array(placed)


def _free_spot(rng: np.random.Generator, cx: float, cy: float, spread: float,
               placed: list[tuple[float, float]]) -> tuple[float, float]:
    """A point near (cx, cy) at least 15 km from every placed city (the last try after 50)."""
    for _attempt in range(50):
        dx, dy = np.clip(rng.normal(0.0, spread, 2), -2.5 * spread, 2.5 * spread)
        x, y = cx + dx, cy + dy
        if all((x - px) ** 2 + (y - py) ** 2 >= 225.0 for px, py in placed):
            break
    return float(x), float(y)


def city_names(rng: np.random.Generator, n: int) -> list[str]:
    """Unique names; none a substring of another, none with "to " / "from " (plan-parser words)."""
    names: list[str] = []
    state_names = {s[0] for s in STATES}
    while len(names) < n:
        stem = CITY_STEMS[int(rng.integers(len(CITY_STEMS)))]
        ending = CITY_ENDINGS[int(rng.integers(len(CITY_ENDINGS)))]
        form = CITY_FORMS[int(rng.integers(len(CITY_FORMS)))]
        if ending in stem.lower():  # no "Crestcrest"
            continue
        name = form.format(stem + ending)
        low = name.lower()
        if "to " in low or "from " in low or name in state_names:
            continue
        if any(name in other or other in name for other in names):
            continue
        names.append(name)
    return names
