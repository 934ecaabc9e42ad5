"""The in-memory world: venues, roads and flights per city index, before anything is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


class Hotel(NamedTuple):
    name: str
    room_type: str
    price: float
    min_nights: float
    review: float
    rules: str
    occupancy: int


class Restaurant(NamedTuple):
    name: str
    cuisines: tuple[str, ...]
    cost: int
    rating: float


class Attraction(NamedTuple):
    name: str
    lat: float
    lon: float
    address: str
    phone: str
    website: str


class Road(NamedTuple):
    duration: str  # "" when missing
    distance: str  # "" when missing
    minutes: int
    km: float  # as parsed back from the distance text, the way the tools compute costs


@dataclass
class Flights:
    """Flight rows sorted by (day, origin, dest, departure); ``key`` indexes route-days."""

    n_cities: int
    key: np.ndarray  # (day * n + origin) * n + dest, ascending
    number: np.ndarray
    price: np.ndarray
    dep: np.ndarray  # minutes after midnight
    arr: np.ndarray
    elapsed: np.ndarray
    day: np.ndarray
    route: np.ndarray  # index into route_origin / route_dest / route_miles
    route_origin: np.ndarray
    route_dest: np.ndarray
    route_miles: np.ndarray

    def on(self, origin: int, dest: int, day: int) -> range:
        k = (day * self.n_cities + origin) * self.n_cities + dest
        lo = int(np.searchsorted(self.key, k, side="left"))
        hi = int(np.searchsorted(self.key, k, side="right"))
        return range(lo, hi)


@dataclass
class DrawnWorld:
    """The synthetic TravelPlanner world as drawn, before it is written in the official layout
    (``World`` is the opened database)."""
    states: list[str]
    state_abbr: list[str]
    cities: list[str]
    city_state: list[int]
    lat: np.ndarray
    lon: np.ndarray
    hotels: list[list[Hotel]]
    restaurants: list[list[Restaurant]]
    attractions: list[list[Attraction]]
    road_rows: list[tuple[int, int, Road]]  # distance.csv rows in file order
    roads: dict[tuple[int, int], Road]  # first row per pair, as the official lookup takes it
    flights: Flights
    dates: list[str]
    cities_in_state: list[list[int]] = field(default_factory=list)
