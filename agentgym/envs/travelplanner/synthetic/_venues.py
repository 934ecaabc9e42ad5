"""Per-city venue tables: accommodations, restaurants and attractions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from agentgym.envs.travelplanner.synthetic._draw import pick
from agentgym.envs.travelplanner.synthetic._model import Attraction, Hotel, Restaurant
from agentgym.envs.travelplanner.synthetic._scale import WorldScale
from agentgym.envs.travelplanner.synthetic._vocab import (
    A_FIRST,
    A_TYPE,
    COMMON_CUISINES,
    CUISINES,
    H_ADJ,
    H_PLACE,
    H_UNIT,
    HOUSE_RULES,
    R_FIRST,
    R_KIND,
    R_PERSON,
    R_SECOND,
    ROOM_TYPES,
    STREET_KINDS,
    STREETS,
)

NameBatch = Callable[[np.random.Generator, int], list[str]]


def _per_city_counts(rng: np.random.Generator, n_cities: int, mean: float, minimum: int) -> list[int]:
    return [max(minimum, int(c)) for c in rng.poisson(mean, n_cities)]


def _substring_free(cand: str, names: Sequence[str]) -> bool:
    """The official lookups match names by substring, so "Fig Cafe" next to "Fig Cafe Annex"
    would make one listing shadow the other."""
    return not any(cand in other or other in cand for other in names)


def _unique_per_city(rng: np.random.Generator, counts: Sequence[int], batch: NameBatch) -> list[list[str]]:
    """Names per city, distinct and never a substring of one another within the city."""
    pool: list[str] = []
    at = 0
    out: list[list[str]] = []
    for count in counts:
        names: list[str] = []
        while len(names) < count:
            if at == len(pool):
                pool, at = batch(rng, max(64, sum(counts) // 4)), 0
            cand = pool[at]
            at += 1
            if _substring_free(cand, names):
                names.append(cand)
        out.append(names)
    return out


# --- accommodations ------------------------------------------------------------------------------


def make_hotels(rng: np.random.Generator, sc: WorldScale, n_cities: int) -> list[list[Hotel]]:
    counts = _per_city_counts(rng, n_cities, sc.accommodations_per_city, 1)
    total = sum(counts)
    room, price, nights, review, occupancy = _hotel_numbers(rng, total)
    rules = _house_rules(rng, sc, total)
    names = _hotel_names(rng, counts, room.tolist())
    out: list[list[Hotel]] = []
    i = 0
    for city_names in names:
        rows: list[Hotel] = []
        for name in city_names:
            rows.append(Hotel(name, ROOM_TYPES[int(room[i])], float(price[i]), float(nights[i]),
                              float(review[i]), rules[i], int(occupancy[i])))
            i += 1
        out.append(rows)
    return out


def _hotel_numbers(rng: np.random.Generator, total: int) -> tuple[np.ndarray, ...]:
    """Room type index, price, minimum nights, review and occupancy per listing."""
    room = rng.choice(3, size=total, p=[0.52, 0.46, 0.02])
    price = np.where(room == 0, rng.integers(200, 1201, total), rng.integers(40, 901, total))
    nights = rng.choice([1, 2, 3, 4, 5, 7, 10, 14, 30], size=total,
                        p=[0.25, 0.25, 0.16, 0.08, 0.06, 0.05, 0.03, 0.03, 0.09])
    review = rng.choice([1, 2, 3, 4, 5], size=total, p=[0.11, 0.22, 0.22, 0.22, 0.23])
    occupancy = np.where(room == 0, rng.choice(np.arange(2, 12), size=total,
                                               p=[0.27, 0.27, 0.11, 0.09, 0.07, 0.06, 0.05, 0.04, 0.025, 0.015]),
                         np.where(room == 1, rng.integers(1, 3, total), 1))
    return room, price, nights, review, occupancy


def _hotel_names(rng: np.random.Generator, counts: Sequence[int], room: list[int]) -> list[list[str]]:
    """Names per city, drawn per room type so a "Shared Dorm" is never listed as an entire
    home; unique and substring-free within the city."""
    total = sum(counts)
    by_type = [_hotel_name_batch(rng, total * 2 + 64, t) for t in ROOM_TYPES]
    name_at = [0, 0, 0]
    out: list[list[str]] = []
    i = 0
    for count in counts:
        names: list[str] = []
        for _ in range(count):
            t = room[i]
            while True:
                if name_at[t] == len(by_type[t]):
                    by_type[t], name_at[t] = _hotel_name_batch(rng, total + 64, ROOM_TYPES[t]), 0
                cand = by_type[t][name_at[t]]
                name_at[t] += 1
                if _substring_free(cand, names):
                    break
            names.append(cand)
            i += 1
        out.append(names)
    return out


def _hotel_name_batch(rng: np.random.Generator, m: int, room_type: str) -> list[str]:
    return [f"{a} {u} {p}" for a, u, p in zip(pick(rng, H_ADJ, m), pick(rng, H_UNIT[room_type], m),
                                             pick(rng, H_PLACE, m))]


def _house_rules(rng: np.random.Generator, sc: WorldScale, total: int) -> list[str]:
    """Mostly one rule, sometimes 2-4; a share left empty like the official listings."""
    n_rules = rng.choice([1, 2, 3, 4], size=total, p=[0.6, 0.28, 0.09, 0.03])
    empty = rng.random(total) < sc.empty_house_rules_fraction
    order = np.argsort(rng.random((total, len(HOUSE_RULES))), axis=1)
    return ["" if e else " & ".join(HOUSE_RULES[j] for j in row[:k])
            for e, k, row in zip(empty.tolist(), n_rules.tolist(), order.tolist())]


# --- restaurants ---------------------------------------------------------------------------------


def make_restaurants(rng: np.random.Generator, sc: WorldScale, n_cities: int) -> list[list[Restaurant]]:
    counts = _per_city_counts(rng, n_cities, sc.restaurants_per_city, 8)
    names = _unique_per_city(rng, counts, _restaurant_name_batch)
    total = sum(counts)
    k = rng.choice([2, 3, 4, 5, 6], size=total, p=[0.08, 0.25, 0.34, 0.25, 0.08])
    order = np.argsort(rng.random((total, len(CUISINES))), axis=1)
    cuisines = [row[:kk] for row, kk in zip(order.tolist(), k.tolist())]
    _ensure_query_cuisines(rng, sc, counts, cuisines)
    cost = np.clip(np.where(rng.random(total) < 0.97, rng.integers(10, 101, total),
                            rng.integers(100, 251, total)), 10, 250)
    rating = np.where(rng.random(total) < 0.2, 0.0,
                      np.round(np.clip(rng.normal(3.4, 0.55, total), 1.8, 4.9), 1))
    out: list[list[Restaurant]] = []
    i = 0
    for city_names in names:
        rows = []
        for name in city_names:
            rows.append(Restaurant(name, tuple(CUISINES[j] for j in cuisines[i]), int(cost[i]), float(rating[i])))
            i += 1
        out.append(rows)
    return out


def _restaurant_name_batch(rng: np.random.Generator, m: int) -> list[str]:
    first, second, kind, person = (pick(rng, w, m) for w in (R_FIRST, R_SECOND, R_KIND, R_PERSON))
    style = rng.random(m).tolist()
    return [f"{p}'s {k}" if u < 0.15 else f"The {a} {b}" if u < 0.3 else f"{a} {b} {k}"
            for a, b, k, p, u in zip(first, second, kind, person, style)]


def _ensure_query_cuisines(rng: np.random.Generator, sc: WorldScale, counts: Sequence[int],
                           cuisines: list[list[int]]) -> None:
    """Every city offers each query cuisine at several restaurants, so cuisine asks are answerable."""
    need = sc.min_restaurants_per_task_cuisine
    start = 0
    for count in counts:
        rows = range(start, start + count)
        for c in range(len(COMMON_CUISINES), len(CUISINES)):
            lacking = [r for r in rows if c not in cuisines[r]]
            short = need - (count - len(lacking))
            if short > 0:
                for r in rng.permutation(lacking)[: min(short, len(lacking))].tolist():
                    cuisines[r].append(c)
        start += count


# --- attractions ---------------------------------------------------------------------------------


def make_attractions(rng: np.random.Generator, sc: WorldScale, world_cities: list[str],
                     abbr: list[str], lat: np.ndarray, lon: np.ndarray) -> list[list[Attraction]]:
    counts = _per_city_counts(rng, len(world_cities), sc.attractions_per_city, 5)
    names = _unique_per_city(rng, counts, _attraction_name_batch)
    return [_city_attractions(rng, city_names, f"{world_cities[c]}, {abbr[c]}", float(lat[c]), float(lon[c]))
            for c, city_names in enumerate(names)]


def _attraction_name_batch(rng: np.random.Generator, m: int) -> list[str]:
    return [f"{a} {t}" for a, t in zip(pick(rng, A_FIRST, m), pick(rng, A_TYPE, m))]


def _city_attractions(rng: np.random.Generator, names: list[str], city_and_state: str,
                      lat: float, lon: float) -> list[Attraction]:
    """One city's attractions: positions near the city, addresses, phones and websites."""
    m = len(names)
    la = lat + rng.normal(0.0, 0.03, m)
    lo = lon + rng.normal(0.0, 0.03, m)
    num = rng.integers(1, 9999, m).tolist()
    street = pick(rng, STREETS, m)
    kind = pick(rng, STREET_KINDS, m)
    zip5 = rng.integers(10000, 99999, m).tolist()
    area = rng.integers(201, 990, m).tolist()
    local = rng.integers(2000000, 9999999, m).tolist()
    unknown_phone = (rng.random(m) < 0.2).tolist()
    unknown_site = (rng.random(m) < 0.2).tolist()
    tld = pick(rng, (".org", ".com", ".gov"), m)
    rows = []
    for j, name in enumerate(names):
        address = f"{num[j]} {street[j]} {kind[j]}, {city_and_state} {zip5[j]}, USA"
        phone = "Unknown" if unknown_phone[j] else f"({area[j]}) {local[j] // 10000}-{local[j] % 10000:04d}"
        slug = "".join(ch for ch in name.lower() if ch.isalnum())
        site = "Unknown" if unknown_site[j] else f"https://www.{slug}{tld[j]}/"
        rows.append(Attraction(name, float(la[j]), float(lo[j]), address, phone, site))
    return rows
