"""Flights: hub-weighted routes, a timetable over the month, and the fast CSV writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agentgym.envs.travelplanner.synthetic._draw import scaled_probability
from agentgym.envs.travelplanner.synthetic._model import DrawnWorld, Flights
from agentgym.envs.travelplanner.synthetic._scale import WorldScale
from agentgym.errors import ConfigError

FLIGHT_HEADER = ("Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate",
                 "OriginCityName", "DestCityName", "Distance")
_MAX_FLIGHT_ROWS = 8_999_000  # flight numbers are "F" + 7 digits, all distinct


def make_flights(rng: np.random.Generator, sc: WorldScale, xy: np.ndarray, city_state: np.ndarray) -> Flights:
    air = np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1])
    weight = rng.lognormal(0.0, 0.9, len(xy))
    first_of_state = np.r_[True, city_state[1:] != city_state[:-1]]
    weight = np.where(first_of_state, weight * 3.0, weight)  # one hub per state
    origin, dest = _directed_routes(rng, sc, air, weight)
    day, route = _route_days(rng, sc, weight, origin, dest)
    return _timetable(rng, len(xy), air[origin, dest], origin, dest, day, route)


def _directed_routes(rng: np.random.Generator, sc: WorldScale, air: np.ndarray,
                     weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(origin, dest) of every route, both directions of each served pair, sorted."""
    iu, ju = _route_pairs(rng, sc, air, weight)
    origin = np.concatenate([iu, ju])
    dest = np.concatenate([ju, iu])
    order = np.lexsort((dest, origin))
    return origin[order], dest[order]


def _route_pairs(rng: np.random.Generator, sc: WorldScale, air: np.ndarray,
                 weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unordered city pairs with service: probability grows with both cities' size (hubs link
    to nearly everything, small towns to a few hubs); very short hops are rarer."""
    n = len(weight)
    iu, ju = np.triu_indices(n, k=1)
    base = weight[iu] * weight[ju] * np.where(air[iu, ju] < 150.0, 0.3, 1.0)
    keep = rng.random(len(iu)) < scaled_probability(base, sc.route_fraction)
    return iu[keep], ju[keep]


def _route_days(rng: np.random.Generator, sc: WorldScale, weight: np.ndarray, origin: np.ndarray,
                dest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(day, route) of every flight: Poisson counts per route-day, busier between big cities."""
    r = len(origin)
    s = np.sqrt(weight[origin] * weight[dest])
    lam = sc.flights_per_route_day * s / s.mean() if r else np.zeros(0)
    counts = rng.poisson(lam[None, :], size=(sc.n_days, r))  # day-major: rows come out date-sorted
    m = int(counts.sum())
    if m > _MAX_FLIGHT_ROWS:
        raise ConfigError("flights_per_route_day", sc.flights_per_route_day,
                          f"a rate giving at most {_MAX_FLIGHT_ROWS:,} flight rows (7-digit flight numbers); got {m:,}")
    flat = np.repeat(np.arange(sc.n_days * r, dtype=np.int64), counts.ravel())
    del counts
    day, route = (flat // max(r, 1)).astype(np.int32), (flat % max(r, 1)).astype(np.int32)
    return day, route


def _timetable(rng: np.random.Generator, n: int, dist_km: np.ndarray, origin: np.ndarray, dest: np.ndarray,
               day: np.ndarray, route: np.ndarray) -> Flights:
    """Times, prices and numbers per flight, sorted by (day, origin, dest, departure).
    int32 columns keep the full preset (~4M rows) to a few hundred MB at peak."""
    m = len(day)
    route_elapsed = 28.0 + dist_km / 800.0 * 60.0
    elapsed = np.maximum(25, np.round(route_elapsed[route] + rng.normal(0.0, 6.0, m))).astype(np.int32)
    dep = (300 + np.floor(rng.random(m) * (1439 - elapsed - 300 + 1))).astype(np.int32)
    route_price = 35.0 + 0.17 * dist_km
    price = np.maximum(20, np.round(route_price[route] * rng.lognormal(0.0, 0.25, m))).astype(np.int32)
    key = (day.astype(np.int64) * n + origin[route]) * n + dest[route]
    sort = np.argsort(key * 1440 + dep, kind="stable")
    start = int(rng.integers(1_000_000, 10_000_000 - m))
    number = (start + rng.permutation(m)).astype(np.int32)  # unique 7-digit numbers, in no particular order
    return Flights(
        n_cities=n, key=key[sort], number=number, price=price[sort], dep=dep[sort],
        arr=(dep + elapsed)[sort], elapsed=elapsed[sort], day=day[sort], route=route[sort],
        route_origin=origin, route_dest=dest, route_miles=np.round(dist_km / 1.609344),
    )


def write_flights(path: Path, world: DrawnWorld, chunk: int = 1 << 18) -> None:
    """Millions of rows: format from lookup tables (times, durations, route suffixes) instead
    of per-cell formatting, and write in chunks. City names hold no comma or quote, so no
    CSV quoting is ever needed."""
    fl = world.flights
    path.parent.mkdir(parents=True, exist_ok=True)
    times = [f"{m // 60:02d}:{m % 60:02d}" for m in range(1440)]
    longest = int(fl.elapsed.max()) if len(fl.elapsed) else 0
    spans = [f"{m // 60} hours {m % 60} minutes" for m in range(longest + 1)]
    routes = [f"{world.cities[o]},{world.cities[d]},{miles:.1f}" for o, d, miles in
              zip(fl.route_origin.tolist(), fl.route_dest.tolist(), fl.route_miles.tolist())]
    dates = world.dates
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write(",".join(FLIGHT_HEADER) + "\n")
        for lo in range(0, len(fl.key), chunk):
            sl = slice(lo, lo + chunk)
            cols = (fl.number[sl].tolist(), fl.price[sl].tolist(), fl.dep[sl].tolist(), fl.arr[sl].tolist(),
                    fl.elapsed[sl].tolist(), fl.day[sl].tolist(), fl.route[sl].tolist())
            f.write("".join([f"F{num},{p},{times[a]},{times[b]},{spans[e]},{dates[d]},{routes[r]}\n"
                             for num, p, a, b, e, d, r in zip(*cols)]))
