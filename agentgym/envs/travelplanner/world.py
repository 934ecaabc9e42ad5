"""The TravelPlanner world: a read-only, indexed database of the sandbox tables.

``World.open(path)`` loads a folder in the official release layout (``database/flights/...``,
``database/accommodations/...``) with the official column names and the official loader's row
filtering (rows with any missing cell are dropped; the distance table is kept whole). The
first open parses the CSVs into a compact cache (pickled small tables, memory-mapped numpy
flight columns); later opens read the cache. ``World.open()`` with no path opens the embedded
synthetic world, generated deterministically on first use.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from agentgym.envs.travelplanner._csv import read_table
from agentgym.envs.travelplanner._flights import FlightTable, build_flight_table
from agentgym.envs.travelplanner._render import render_table
from agentgym.errors import DataError

__all__ = [
    "World",
    "Flight",
    "Accommodation",
    "Restaurant",
    "Attraction",
    "Distance",
    "DATABASE_ENV_VAR",
    "CACHE_ENV_VAR",
    "default_world_path",
]

DATABASE_ENV_VAR = "AGENTGYM_TRAVELPLANNER_DB"
CACHE_ENV_VAR = "AGENTGYM_CACHE_DIR"
_CACHE_VERSION = "5"
_OPEN: dict[Path, World] = {}
_DEFAULT_WORLD = ("default", 0)  # (scale preset, seed) of the embedded world


class Flight(NamedTuple):
    number: str
    price: Any
    dep_time: str
    arr_time: str
    elapsed: str
    date: str
    origin: str
    dest: str
    distance: Any
    COLUMNS = ("Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime",
               "FlightDate", "OriginCityName", "DestCityName", "Distance")


class Accommodation(NamedTuple):
    name: str
    price: Any
    room_type: str
    house_rules: str
    minimum_nights: Any
    maximum_occupancy: Any
    review_rate_number: Any
    city: str
    COLUMNS = ("NAME", "price", "room type", "house_rules", "minimum nights",
               "maximum occupancy", "review rate number", "city")


class Restaurant(NamedTuple):
    name: str
    average_cost: Any
    cuisines: str
    aggregate_rating: Any
    city: str
    COLUMNS = ("Name", "Average Cost", "Cuisines", "Aggregate Rating", "City")


class Attraction(NamedTuple):
    name: str
    latitude: Any
    longitude: Any
    address: str
    phone: str
    website: str
    city: str
    COLUMNS = ("Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City")


class Distance(NamedTuple):
    origin: str
    destination: str
    duration: str | None
    distance: str | None
    COLUMNS = ("origin", "destination", "duration", "distance")


_SOURCES = {
    "flights": "database/flights/clean_Flights_2022.csv",
    "accommodations": "database/accommodations/clean_accommodations_2022.csv",
    "restaurants": "database/restaurants/clean_restaurant_2022.csv",
    "attractions": "database/attractions/attractions.csv",
    "distances": "database/googleDistanceMatrix/distance.csv",
    "city_set": "database/background/citySet.txt",
    "city_states": "database/background/citySet_with_states.txt",
    "state_set": "database/background/stateSet.txt",
}


class World:
    """Read-only TravelPlanner tables with hash and binary-search lookups."""

    def __init__(self, root: Path, small: dict[str, Any], flights: FlightTable) -> None:
        self.root = root
        self._small = small
        self._flights = flights
        self.cities: tuple[str, ...] = small["city_set"]
        self.city_set = frozenset(self.cities)
        self.state_of: dict[str, str] = small["state_of"]
        self.states: tuple[str, ...] = small["state_set"]
        self._cities_in_state: dict[str, tuple[str, ...]] = small["cities_in_state"]

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, cache_dir: str | os.PathLike[str] | None = None) -> World:
        """Open a world folder (or its ``database/`` folder); None opens ``$AGENTGYM_TRAVELPLANNER_DB``
        if set, else the embedded synthetic world."""
        if path is None:
            path = os.environ.get(DATABASE_ENV_VAR) or default_world_path(cache_dir)
        root = _world_root(Path(path))
        cache = _cache_folder(root, cache_dir)
        # One instance per cache folder per process: many envs share one world's memory.
        world = _OPEN.get(cache)
        if world is None:
            if not (cache / "small.pkl").exists():
                _build_cache(root, cache)
            with open(cache / "small.pkl", "rb") as f:
                small = pickle.load(f)
            world = _OPEN[cache] = cls(root, small, FlightTable(cache / "flights"))
        return world

    # -- lookups -----------------------------------------------------------------------------
    def flights(self, origin: str, dest: str, date: str) -> list[Flight]:
        """Flights on one route and date, in file order."""
        return [Flight(*r) for r in self._flights.route_date(origin, dest, date)]

    def flights_by_number(self, number: str) -> list[Flight]:
        """Every row with this flight number, in file order (the official price lookup takes the first)."""
        return [Flight(*r) for r in self._flights.by_number(number)]

    def flight_price_routes(self, number: str) -> list[tuple[Any, str, str]]:
        """``(price, origin, dest)`` of ``flights_by_number(number)``, without decoding the rest."""
        return self._flights.price_routes(number)

    def accommodations(self, city: str) -> tuple[Accommodation, ...]:
        return self._small["accommodations"].get(city, ())

    def restaurants(self, city: str) -> tuple[Restaurant, ...]:
        return self._small["restaurants"].get(city, ())

    def restaurant_labels(self, city: str) -> tuple[int, ...]:
        """The pandas index labels of ``restaurants(city)``; the official RestaurantSearch prints them."""
        return self._small["restaurant_labels"].get(city, ())

    def city_table(self, table: str, city: str) -> str | None:
        """The city's ``accommodations``/``restaurants``/``attractions`` as the official tool prints
        them (rendered once, when the cache is built); None when the city has no rows."""
        return self._small["rendered"][table].get(city)

    def attractions(self, city: str) -> tuple[Attraction, ...]:
        return self._small["attractions"].get(city, ())

    def distance(self, origin: str, destination: str) -> Distance | None:
        """The first distance row for the pair, as the official lookup takes it."""
        return self._small["distances"].get((origin, destination))

    def cities_in_state(self, state: str) -> tuple[str, ...] | None:
        return self._cities_in_state.get(state)

    @property
    def n_flights(self) -> int:
        return self._flights.n_rows

    def __repr__(self) -> str:
        return f"World({str(self.root)!r}, cities={len(self.cities)}, flights={self.n_flights})"

    def __reduce__(self):
        # Pickle by location: the tables are re-read from the cache on the other side.
        return (World.open, (str(self.root),))


def default_world_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Folder of the embedded synthetic world; generated on first use."""
    scale, seed = _DEFAULT_WORLD
    folder = _cache_base(cache_dir) / "worlds" / f"synthetic-{scale}-seed{seed}-v{_CACHE_VERSION}"
    if not (folder / "database").is_dir():
        from agentgym.envs.travelplanner.synthetic import generate_world

        _atomic_folder(folder, lambda tmp: generate_world(tmp, seed=seed, scale=scale))
    return folder


def _world_root(path: Path) -> Path:
    path = path.expanduser().resolve()
    if (path / "database").is_dir():
        return path
    if path.name == "database" and path.is_dir():
        return path.parent
    raise DataError(
        f"{path} is not a TravelPlanner world: expected a folder holding database/ "
        f"(flights/, accommodations/, restaurants/, attractions/, googleDistanceMatrix/, background/)"
    )


def _cache_base(cache_dir: str | os.PathLike[str] | None) -> Path:
    base = cache_dir or os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "agentgym"
    return Path(base).expanduser()


def _cache_folder(root: Path, cache_dir: str | os.PathLike[str] | None) -> Path:
    digest = hashlib.sha256(f"{_CACHE_VERSION}|{root}".encode())
    for rel in _SOURCES.values():
        p = root / rel
        if not p.exists():
            raise DataError(f"missing database file {p}")
        st = p.stat()
        digest.update(f"|{rel}|{st.st_size}|{st.st_mtime_ns}".encode())
    return _cache_base(cache_dir) / "tables" / digest.hexdigest()[:24]


def _build_cache(root: Path, cache: Path) -> None:
    def build(tmp: Path) -> None:
        build_flight_table(root / _SOURCES["flights"], tmp / "flights")
        with open(tmp / "small.pkl", "wb") as f:
            pickle.dump(_load_small_tables(root), f, protocol=pickle.HIGHEST_PROTOCOL)

    _atomic_folder(cache, build)


def _atomic_folder(target: Path, fill) -> None:
    """Fill a temporary sibling folder, then rename it into place (safe under concurrency)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        fill(tmp)
        try:
            os.replace(tmp, target)
        except OSError:
            if not target.exists():  # another process won the race; otherwise re-raise
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _load_small_tables(root: Path) -> dict[str, Any]:
    src = {k: root / v for k, v in _SOURCES.items()}
    city_states = [line.split("\t") for line in _lines(src["city_states"])]
    bad = [i for i, cs in enumerate(city_states) if len(cs) != 2]
    if bad:
        raise DataError(f"{src['city_states']}: line {bad[0] + 1} is not 'city<TAB>state'")
    restaurants, restaurant_labels = _by_city(Restaurant, read_table(src["restaurants"], Restaurant.COLUMNS, dropna=True))
    accommodations = _by_city(Accommodation, read_table(src["accommodations"], Accommodation.COLUMNS, dropna=True))[0]
    attractions = _by_city(Attraction, read_table(src["attractions"], Attraction.COLUMNS, dropna=True))[0]
    cities_in_state: dict[str, list[str]] = {}
    for city, state in city_states:
        cities_in_state.setdefault(state, []).append(city)
    return {
        "city_set": tuple(_lines(src["city_set"])),
        "state_set": tuple(_lines(src["state_set"])),
        "state_of": {city: state for city, state in reversed(city_states)},
        "cities_in_state": {s: tuple(c) for s, c in cities_in_state.items()},
        "accommodations": accommodations,
        "restaurants": restaurants,
        "restaurant_labels": restaurant_labels,
        "attractions": attractions,
        "rendered": {
            # The official RestaurantSearch alone prints pandas' row labels (``to_string()``).
            "restaurants": {c: render_table(Restaurant.COLUMNS, r, restaurant_labels[c]) for c, r in restaurants.items()},
            "accommodations": {c: render_table(Accommodation.COLUMNS, r) for c, r in accommodations.items()},
            "attractions": {c: render_table(Attraction.COLUMNS, r) for c, r in attractions.items()},
        },
        "distances": _first_per_pair(read_table(src["distances"], Distance.COLUMNS, dropna=False)),
    }


def _lines(path: Path) -> list[str]:
    return [line.rstrip("\r") for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _by_city(row_type, rows: Iterable[tuple[Any, ...]]):
    """Rows grouped by city in file order, and their pandas index labels likewise."""
    grouped: dict[str, list[Any]] = {}
    labels: dict[str, list[int]] = {}
    for label, *values in rows:
        item = row_type(*values)
        grouped.setdefault(item.city, []).append(item)
        labels.setdefault(item.city, []).append(label)
    return ({c: tuple(v) for c, v in grouped.items()}, {c: tuple(v) for c, v in labels.items()})


def _first_per_pair(rows: Iterable[tuple[Any, ...]]) -> dict[tuple[str, str], Distance]:
    pairs: dict[tuple[str, str], Distance] = {}
    for _label, origin, dest, duration, distance in rows:
        if origin is None or dest is None:
            continue
        key = (str(origin), str(dest))
        if key not in pairs:
            pairs[key] = Distance(key[0], key[1], _text(duration), _text(distance))
    return pairs


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
