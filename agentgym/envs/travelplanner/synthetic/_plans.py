"""Reference plans: stays, meals and sights around the chosen moves, in the annotated-plan format."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agentgym.envs.travelplanner.synthetic._model import Attraction, Hotel, Restaurant, World
from agentgym.envs.travelplanner.synthetic._moves import Move, choose_moves, moves_by_day
from agentgym.envs.travelplanner.synthetic._specs import Spec, city_label

_NIGHTS_PER_CITY = 2  # every plan stays two nights in each visited city
_ROOM_TYPE_OF = {"shared room": "Shared room", "private room": "Private room", "entire room": "Entire home/apt"}

MealSlot = tuple[int, str, int]  # (day offset, meal, city)
Meals = dict[tuple[int, str], tuple[int, Restaurant]]  # (day offset, meal) -> (city, restaurant)
Sights = dict[int, tuple[int, list[Attraction]]]  # day offset -> (city, attractions)


def build_plan(world: World, rng: np.random.Generator, spec: Spec) -> tuple[list[dict[str, Any]], float] | None:
    """Day dicts and their valid_cost total, or None when this world cannot serve the spec."""
    moves = choose_moves(world, rng, spec)
    if moves is None:
        return None
    picked = [_choose_hotel(world, rng, c, spec) for c in spec.cities]
    hotels = [h for h in picked if h is not None]
    if len(hotels) < len(picked):
        return None
    meals = _choose_restaurants(world, rng, spec, _meal_slots(spec, moves))
    if meals is None:
        return None
    sights = _choose_attractions(world, rng, spec, moves)
    if sights is None:
        return None
    return _assemble(world, spec, moves, hotels, meals, sights)


# --- accommodations ------------------------------------------------------------------------------


def _choose_hotel(world: World, rng: np.random.Generator, city: int, spec: Spec) -> Hotel | None:
    rule, room = spec.constraint["house rule"], spec.constraint["room type"]
    ok = [h for h in world.hotels[city]
          if h.rules  # the official loader drops listings with empty house_rules
          and h.min_nights <= _NIGHTS_PER_CITY
          and (rule is None or f"No {rule}" not in h.rules)
          and _room_ok(room, h.room_type)]
    return ok[int(rng.integers(len(ok)))] if ok else None


def _room_ok(required: str | None, room_type: str) -> bool:
    """The official valid_room_type rule."""
    if required is None:
        return True
    if required == "not shared room":
        return room_type != "Shared room"
    return room_type == _ROOM_TYPE_OF[required]


# --- meals ---------------------------------------------------------------------------------------


def _meal_slots(spec: Spec, moves: list[Move]) -> list[MealSlot]:
    """(day offset, meal, city) of each meal the plan takes; travel days skip meals that
    the timetable rules out."""
    slots: list[MealSlot] = []
    by_day = moves_by_day(spec, moves)
    for t in range(spec.days):
        if t in by_day:
            slots += _travel_day_meals(t, *by_day[t], last_day=spec.days - 1)
        else:  # a full day in one city
            c = spec.cities[(t - 1) // 2]
            slots += [(t, "breakfast", c), (t, "lunch", c), (t, "dinner", c)]
    return slots


def _travel_day_meals(t: int, m: Move, o: int, d: int, last_day: int) -> list[MealSlot]:
    """Meals before departure (in the origin) or after arrival (in the destination)."""
    first, last = t == 0, t == last_day
    slots: list[MealSlot] = []
    if not first and m.dep >= 8 * 60:
        slots.append((t, "breakfast", o))
    if not last and m.arr <= 12 * 60 + 30:
        slots.append((t, "lunch", d))
    elif not first and m.dep >= 13 * 60 + 30:
        slots.append((t, "lunch", o))
    if not last and m.arr <= 20 * 60 + 30:
        slots.append((t, "dinner", d))
    elif not first and m.dep >= 19 * 60 + 30:
        slots.append((t, "dinner", o))
    return slots


def _choose_restaurants(world: World, rng: np.random.Generator, spec: Spec,
                        slots: list[MealSlot]) -> Meals | None:
    """(city, restaurant) per (day, meal), all distinct; required cuisines get slots first."""
    used: set[tuple[int, str]] = set()
    chosen: Meals = {}
    free = [slots[i] for i in rng.permutation(len(slots)).tolist()]
    for cuisine in spec.constraint["cuisine"] or ():
        j = _first_slot_serving(world, free, cuisine, used)
        if j is None:
            return None
        t, meal, c = free.pop(j)
        _take_restaurant(world, rng, chosen, used, t, meal, c, cuisine)
    for t, meal, c in free:
        if not _take_restaurant(world, rng, chosen, used, t, meal, c, None):
            return None
    return chosen


def _first_slot_serving(world: World, free: list[MealSlot], cuisine: str, used: set[tuple[int, str]]) -> int | None:
    for j, (_, _, c) in enumerate(free):
        if any(cuisine in r.cuisines and (c, r.name) not in used for r in world.restaurants[c]):
            return j
    return None


def _take_restaurant(world: World, rng: np.random.Generator, chosen: Meals, used: set[tuple[int, str]],
                     t: int, meal: str, c: int, cuisine: str | None) -> bool:
    """Pick an unused restaurant in city c (serving ``cuisine`` if given) for the slot."""
    options = [r for r in world.restaurants[c]
               if (cuisine is None or cuisine in r.cuisines) and (c, r.name) not in used]
    if not options:
        return False
    r = options[int(rng.integers(len(options)))]
    chosen[(t, meal)] = (c, r)
    used.add((c, r.name))
    return True


# --- attractions ---------------------------------------------------------------------------------


def _choose_attractions(world: World, rng: np.random.Generator, spec: Spec, moves: list[Move]) -> Sights | None:
    """Per day offset: (city, attractions), none repeated."""
    wanted = _sight_counts(rng, spec, moves)
    pools = {c: [world.attractions[c][i] for i in rng.permutation(len(world.attractions[c])).tolist()]
             for c in sorted({c for _, c, _ in wanted})}
    out: Sights = {}
    for t, c, count in wanted:
        take, pools[c] = pools[c][:count], pools[c][count:]
        if not take:
            return None
        out[t] = (c, take)
    return out


def _sight_counts(rng: np.random.Generator, spec: Spec, moves: list[Move]) -> list[tuple[int, int, int]]:
    """(day, city, count): stay days see 1-3 sights; travel days one, when the timetable
    leaves time for it."""
    wanted: list[tuple[int, int, int]] = []
    by_day = moves_by_day(spec, moves)
    for t in range(spec.days):
        if t not in by_day:
            wanted.append((t, spec.cities[(t - 1) // 2], int(rng.integers(1, 4))))
            continue
        m, o, d = by_day[t]
        if t != spec.days - 1 and m.arr <= 15 * 60:
            wanted.append((t, d, 1))
        elif t != 0 and m.dep >= 12 * 60:
            wanted.append((t, o, 1))
    return wanted


# --- assembly ------------------------------------------------------------------------------------


def _assemble(world: World, spec: Spec, moves: list[Move], hotels: list[Hotel], meals: Meals,
              sights: Sights) -> tuple[list[dict[str, Any]], float]:
    """Day dicts in the official annotated-plan format, and their valid_cost total (summed in
    plan order: moves, then each day's meals and stay)."""
    by_day = moves_by_day(spec, moves)
    plan: list[dict[str, Any]] = []
    total = sum(m.cost for m in moves)
    for t in range(spec.days):
        if t in by_day:
            m, o, d = by_day[t]
            current = f"from {city_label(world, o, spec)} to {city_label(world, d, spec)}"
            day: dict[str, Any] = {"days": t + 1, "current_city": current, "transportation": m.text}
        else:
            current = city_label(world, spec.cities[(t - 1) // 2], spec)
            day = {"days": t + 1, "current_city": current, "transportation": "-"}
        for meal in ("breakfast", "attraction", "lunch", "dinner"):
            day[meal] = _sight_entry(world, spec, sights, t) if meal == "attraction" else \
                _meal_entry(world, spec, meals, t, meal)
            if (t, meal) in meals:
                total += meals[(t, meal)][1].cost * spec.people
        day["accommodation"] = "-"
        if t < spec.days - 1:
            h = hotels[t // 2]
            day["accommodation"] = f"{h.name}, {city_label(world, spec.cities[t // 2], spec)}"
            total += h.price * math.ceil(spec.people / h.occupancy)
        plan.append(day)
    return plan, total


def _sight_entry(world: World, spec: Spec, sights: Sights, t: int) -> str:
    if t not in sights:
        return "-"
    c, items = sights[t]
    return "".join(f"{a.name}, {city_label(world, c, spec)};" for a in items) or "-"


def _meal_entry(world: World, spec: Spec, meals: Meals, t: int, meal: str) -> str:
    if (t, meal) not in meals:
        return "-"
    c, r = meals[(t, meal)]
    return f"{r.name}, {city_label(world, c, spec)}"
