"""The Google distance matrix: which city pairs are listed, and their duration/distance texts."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from agentgym.envs.travelplanner.synthetic._draw import scaled_probability
from agentgym.envs.travelplanner.synthetic._model import Road
from agentgym.envs.travelplanner.synthetic._scale import WorldScale

RoadRow = tuple[int, int, Road]


def duration_text(minutes: int) -> str:
    """Google-style durations: "45 mins", "1 hour 5 mins", "10 hours 55 mins", "1 day 3 hours"."""
    if minutes >= 1440:
        d, h = divmod(minutes // 60, 24)
        return f"{d} day{'s' if d > 1 else ''} {h} hour{'s' if h != 1 else ''}"
    h, m = divmod(minutes, 60)
    mins = f"{m} min{'s' if m != 1 else ''}"
    return mins if h == 0 else f"{h} hour{'s' if h != 1 else ''} {mins}"


def distance_text(km: float) -> str:
    """"1,144 km" / "285 km" / "42.7 km" as in the official table."""
    return f"{int(km + 0.5):,} km" if km >= 100 else f"{km:.1f} km"


def km_of(text: str) -> float:
    return float(text.replace(",", "").replace("km", "").strip())


def make_roads(rng: np.random.Generator, sc: WorldScale, xy: np.ndarray, city_state: np.ndarray) -> list[RoadRow]:
    """distance.csv rows: intra-state pairs nearly always, a share of the rest; both directions
    for most pairs; some empty rows; some rows repeated (lookups take the first)."""
    iu, ju, air = _listed_pairs(rng, sc, xy, city_state)
    directed = _directed_rows(rng, iu, ju, air)
    return _with_duplicates(rng, sc, _road_rows(rng, sc, directed))


def first_roads(rows: Iterable[RoadRow]) -> dict[tuple[int, int], Road]:
    first: dict[tuple[int, int], Road] = {}
    for o, d, road in rows:
        first.setdefault((o, d), road)
    return first


def _listed_pairs(rng: np.random.Generator, sc: WorldScale, xy: np.ndarray,
                  city_state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unordered pairs in the table, in shuffled order, with their straight-line km."""
    n = len(xy)
    iu, ju = np.triu_indices(n, k=1)
    same = city_state[iu] == city_state[ju]
    air = np.hypot(*(xy[iu] - xy[ju]).T)
    # Nearer pairs are likelier to be listed (the official table is mostly drivable pairs).
    p_other = scaled_probability(1.0 / (1.0 + (air / 1500.0) ** 2), sc.distance_pair_fraction)
    keep = rng.random(len(iu)) < np.where(same, 0.97, p_other)
    iu, ju, air = iu[keep], ju[keep], air[keep]
    order = rng.permutation(len(iu))
    return iu[order], ju[order], air[order]


def _directed_rows(rng: np.random.Generator, iu: np.ndarray, ju: np.ndarray,
                   air: np.ndarray) -> list[tuple[int, int, float, float]]:
    """(origin, dest, road km, speed) rows: most pairs both ways, in a random direction first."""
    road = np.maximum(3.0, air * rng.uniform(1.12, 1.32, len(iu)))
    speed = rng.uniform(85.0, 105.0, len(iu))
    both = rng.random(len(iu)) < 0.9
    forward_first = rng.random(len(iu)) < 0.5
    rows: list[tuple[int, int, float, float]] = []
    for a, b, km, v, two, fwd in zip(iu.tolist(), ju.tolist(), road.tolist(), speed.tolist(),
                                     both.tolist(), forward_first.tolist()):
        pair = [(a, b), (b, a)] if fwd else [(b, a), (a, b)]
        for o, d in pair[: 2 if two else 1]:
            rows.append((o, d, km, v))
    return rows


def _road_rows(rng: np.random.Generator, sc: WorldScale,
               rows: list[tuple[int, int, float, float]]) -> list[RoadRow]:
    """Texts per directed row (directions differ a little); a share left empty."""
    m = len(rows)
    km = np.array([r[2] for r in rows]) * rng.uniform(0.995, 1.005, m)
    minutes = _road_minutes(km, np.array([r[3] for r in rows]) * rng.uniform(0.98, 1.02, m))
    missing = (rng.random(m) < sc.distance_missing_fraction).tolist()
    out: list[RoadRow] = []
    for (o, d, _, _), k, mins, miss in zip(rows, km.tolist(), minutes.tolist(), missing):
        if miss:
            out.append((o, d, Road("", "", 0, 0.0)))
        else:
            text = distance_text(k)
            out.append((o, d, Road(duration_text(int(mins)), text, int(mins), km_of(text))))
    return out


def _road_minutes(km: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """Driving time; never a round hour or day, whose Google text ("2 hours") the table lacks."""
    minutes = np.maximum(4, np.round(km / speed * 60.0 + 5.0)).astype(np.int64)
    minutes += (minutes % 60 == 0)
    long = minutes >= 1440
    minutes[long] += np.where((minutes[long] // 60) % 24 == 0, 60, 0)
    return minutes


def _with_duplicates(rng: np.random.Generator, sc: WorldScale, rows: list[RoadRow]) -> list[RoadRow]:
    """Repeat a share of rows at a later position, as the official table does."""
    dup = np.flatnonzero(rng.random(len(rows)) < sc.distance_duplicate_fraction).tolist()
    slots = rng.integers(0, len(rows) + 1, len(dup)).tolist()
    inserts: dict[int, list[RoadRow]] = {}
    for src, slot in zip(dup, slots):
        inserts.setdefault(max(slot, src + 1), []).append(rows[src])
    out: list[RoadRow] = []
    for i in range(len(rows) + 1):
        out.extend(inserts.get(i, ()))
        if i < len(rows):
            out.append(rows[i])
    return out
