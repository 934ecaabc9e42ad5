"""Transportation of a reference plan: one flight, taxi or drive per travel day."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from agentgym.envs.travelplanner.synthetic._model import Flights, Road, World
from agentgym.envs.travelplanner.synthetic._specs import Leg, Spec, city_label, legs

_GROUND_OUT, _GROUND_MID, _GROUND_BACK = 7 * 60, 9 * 60, 14 * 60  # departure times by road
_TAXI_MAX_KM = 800.0  # longer taxi rides would be absurd (and dominate the budget)
_SHORT_HOP_KM = 250.0  # air trips take a taxi instead of a flight on some hops this short


class Move(NamedTuple):
    text: str
    kind: str  # "flight" | "self-driving" | "taxi"
    cost: float  # for the whole group, as valid_cost computes it
    dep: int  # minutes after midnight
    arr: int  # may exceed 1440 for long drives (arrival the next day)


def moves_by_day(spec: Spec, moves: list[Move]) -> dict[int, tuple[Move, int, int]]:
    """Day offset -> (move, origin, destination) for each travel day."""
    return {t: (m, o, d) for (t, o, d), m in zip(legs(spec), moves)}


def choose_moves(world: World, rng: np.random.Generator, spec: Spec) -> list[Move] | None:
    """One transport per travel day. Self-driving never mixes with flights or taxis
    (the official conflict rule), so the whole trip is either by car or by air/taxi."""
    rule = spec.constraint["transportation"]
    if rule == "no flight":
        modes = ["drive", "taxi"]
    elif rule == "no self-driving":
        modes = ["air"]
    else:
        modes = ["drive", "air"]
    for i in rng.permutation(len(modes)).tolist():
        tried = [_move(world, rng, modes[i], leg, spec) for leg in legs(spec)]
        moves = [m for m in tried if m is not None]
        if len(moves) == len(tried):
            return moves
    return None


def _move(world: World, rng: np.random.Generator, mode: str, leg: Leg, spec: Spec) -> Move | None:
    """The leg by ``mode``; "air" falls back to a taxi on short hops (sometimes) and on days
    without a flight. None when the mode cannot serve the leg."""
    t, o, d = leg
    road = _usable_road(world, o, d)
    ground_dep = _GROUND_OUT if t == 0 else _GROUND_BACK if t == spec.days - 1 else _GROUND_MID
    a, b = city_label(world, o, spec), city_label(world, d, spec)
    taxi = None if road is None or road.km > _TAXI_MAX_KM else road
    if mode == "drive":
        return None if road is None else _ground_move("drive", a, b, road, ground_dep, spec.people)
    if mode == "taxi" or (taxi is not None and taxi.km < _SHORT_HOP_KM and rng.random() < 0.4):
        return _ground_move("taxi", a, b, taxi, ground_dep, spec.people) if taxi is not None else None
    flights = world.flights.on(o, d, spec.start + t)
    if len(flights) == 0:
        return _ground_move("taxi", a, b, taxi, ground_dep, spec.people) if taxi is not None else None
    i = flights[int(rng.integers(len(flights)))]
    return _flight_move(world.flights, i, a, b, spec.people)


def _usable_road(world: World, o: int, d: int) -> Road | None:
    """The first distance row for the pair, unless the official tools would call it "no valid
    information" (empty, or a day or more)."""
    road = world.roads.get((o, d))
    if road is not None and (not road.duration or "day" in road.duration):
        return None
    return road


def _ground_move(mode: str, a: str, b: str, road: Road, dep: int, people: int) -> Move:
    if mode == "drive":
        unit, per_vehicle, kind, name = int(road.km * 0.05), 5, "self-driving", "Self-driving"
    else:
        unit, per_vehicle, kind, name = int(road.km), 4, "taxi", "Taxi"
    text = f"{name}, from {a} to {b}, duration: {road.duration}, distance: {road.distance}, cost: {unit}"
    return Move(text, kind, float(unit * math.ceil(people / per_vehicle)), dep, dep + road.minutes)


def _flight_move(fl: Flights, i: int, a: str, b: str, people: int) -> Move:
    dep, arr = int(fl.dep[i]), int(fl.arr[i])
    text = (f"Flight Number: F{int(fl.number[i])}, from {a} to {b}, "
            f"Departure Time: {dep // 60:02d}:{dep % 60:02d}, Arrival Time: {arr // 60:02d}:{arr % 60:02d}")
    return Move(text, "flight", float(fl.price[i]) * people, dep, arr)
