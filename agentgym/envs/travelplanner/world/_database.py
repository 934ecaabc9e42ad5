"""The TravelPlanner world: a read-only, indexed database of the sandbox tables.

``World.open(path)`` loads a folder in the official release layout (``database/flights/...``,
``database/accommodations/...``) with the official column names and the official loader's row
filtering (rows with any missing cell are dropped; the distance table is kept whole). The
first open parses the CSVs into a compact cache under the cache directory (the small tables as
JSON, the flight columns as memory-mapped numpy arrays); later opens check the cache's manifest
and read it. The cache holds data only and is rebuilt when it does not match its manifest; the
data folder itself is never written. The embedded synthetic world (what an env opens when given
no database) is resolved in ``synthetic.open_world``, which generates it on first use.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import stat
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from agentgym.envs.travelplanner.world.cache import install, is_valid
from agentgym.envs.travelplanner.world._csv import read_table
from agentgym.envs.travelplanner.world._flights import FlightTable, build_flight_table
from agentgym.envs.travelplanner.world._integrity import (
    MAX_CELL_CHARS,
    NUMERIC,
    RULES,
    damaged,
    not_a_file,
    not_utf8,
    unreadable,
)
from agentgym.envs.travelplanner.world._render import render_table
from agentgym.errors import DataError, short_repr

__all__ = [
    "World",
    "Flight",
    "Accommodation",
    "Restaurant",
    "Attraction",
    "Distance",
    "DATABASE_ENV_VAR",
    "CACHE_ENV_VAR",
    "cache_base",
]

DATABASE_ENV_VAR = "AGENTGYM_TRAVELPLANNER_DB"
CACHE_ENV_VAR = "AGENTGYM_CACHE_DIR"
_TABLES_VERSION = "8"  # of the parsed-tables cache (8: built by a checked open)
_TABLES_KIND = "agentgym-world-tables"
_OPEN: dict[Path, World] = {}
_OPEN_LOCK = threading.Lock()  # two threads opening one world would build it twice


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

    def __init__(self, root: Path, small: dict[str, Any], flights: FlightTable, rendered: Path | None = None) -> None:
        self.root = root
        self._rendered_path = rendered
        self._small = small
        self._flights = flights
        self._typed: dict[str, dict[str, tuple[Any, ...]]] = {t: {} for t in _ROW_TYPES}
        self.cities: tuple[str, ...] = tuple(small["city_set"])
        self.city_set = frozenset(self.cities)
        self.states: tuple[str, ...] = tuple(small["state_set"])
        city_states = small["city_states"]
        self.state_of: dict[str, str] = {city: state for city, state in reversed(city_states)}
        cities_in_state: dict[str, list[str]] = {}
        for city, state in city_states:
            cities_in_state.setdefault(state, []).append(city)
        self._cities_in_state = {s: tuple(c) for s, c in cities_in_state.items()}
        self._distances: dict[tuple[str, str], Distance] | None = None  # built on first use
        self._rendered: dict[str, dict[str, str]] | None = None  # read on first use

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, cache_dir: str | os.PathLike[str] | None = None) -> World:
        """Open a world folder (or its ``database/`` folder)."""
        if path is None:
            raise DataError("World.open needs a world folder; agentgym.envs.travelplanner.synthetic.open_world() "
                            f"also reads ${DATABASE_ENV_VAR} and falls back to the embedded synthetic world")
        root = _world_root(Path(path))
        cache = _cache_folder(root, cache_dir)
        # One instance per cache folder per process: many envs share one world's memory.
        with _OPEN_LOCK:
            world = _OPEN.get(cache)
            if world is None:
                small = _read_cache(cache) if is_valid(cache, _TABLES_KIND, _TABLES_VERSION) else None
                if small is None:
                    small = install(cache, _TABLES_KIND, _TABLES_VERSION, lambda tmp: _build_cache(root, tmp))
                world = _OPEN[cache] = cls(root, small, FlightTable(cache / "flights"), cache / "rendered.json")
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
        return self._rows("accommodations", city)

    def restaurants(self, city: str) -> tuple[Restaurant, ...]:
        return self._rows("restaurants", city)

    def restaurant_labels(self, city: str) -> tuple[int, ...]:
        """The pandas index labels of ``restaurants(city)``; the official RestaurantSearch prints them."""
        return tuple(self._small["restaurant_labels"].get(city, ()))

    def city_table(self, table: str, city: str) -> str | None:
        """The city's ``accommodations``/``restaurants``/``attractions`` as the official tool prints
        them (rendered when the cache is built, read on first use); None when the city has no rows."""
        if self._rendered is None:
            self._rendered = _read_rendered(self._rendered_path) or _render_all(self._small)
        return self._rendered[table].get(city)

    def attractions(self, city: str) -> tuple[Attraction, ...]:
        return self._rows("attractions", city)

    def distance(self, origin: str, destination: str) -> Distance | None:
        """The first distance row for the pair, as the official lookup takes it."""
        if self._distances is None:
            self._distances = {(o, d): Distance(o, d, duration, distance)
                               for o, d, duration, distance in self._small["distances"]}
        return self._distances.get((origin, destination))

    def _rows(self, table: str, city: str) -> tuple[Any, ...]:
        # Rows become named tuples per city on first use, so opening a world stays cheap.
        rows = self._typed[table].get(city)
        if rows is None:
            row_type = _ROW_TYPES[table]
            rows = self._typed[table][city] = tuple(row_type(*r) for r in self._small[table].get(city, ()))
        return rows

    def cities_in_state(self, state: str) -> tuple[str, ...] | None:
        return self._cities_in_state.get(state)

    @property
    def n_flights(self) -> int:
        return self._flights.n_rows

    def __repr__(self) -> str:
        return f"World({str(self.root)!r}, cities={len(self.cities)}, flights={self.n_flights})"

    def forget(self) -> None:
        """Drop this world from the per-process registry (its folder is about to move or vanish);
        a later ``open`` re-reads the cache in milliseconds."""
        for key, value in list(_OPEN.items()):
            if value is self:
                _OPEN.pop(key, None)

    def __reduce__(self):
        # Pickle by location: the tables are re-read from the cache on the other side.
        return (World.open, (str(self.root),))


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


def cache_base(cache_dir: str | os.PathLike[str] | None) -> Path:
    base = cache_dir or os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "agentgym"
    return Path(base).expanduser()


def _cache_folder(root: Path, cache_dir: str | os.PathLike[str] | None) -> Path:
    digest = hashlib.sha256(f"{_TABLES_VERSION}|{root}".encode())
    for rel in _SOURCES.values():
        p = root / rel
        try:
            st = p.stat()
        except OSError as exc:
            raise unreadable(p, exc) from None
        if not stat.S_ISREG(st.st_mode):
            raise not_a_file(p, "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file")
        digest.update(f"|{rel}|{st.st_size}|{st.st_mtime_ns}".encode())
    return cache_base(cache_dir) / "tables" / digest.hexdigest()[:24]


def _build_cache(root: Path, cache: Path) -> dict[str, Any]:
    """Write the cache files into ``cache``; returns the small tables (so the first open need not re-read them)."""
    # The small tables are read (in Python) while the flights are parsed (in pyarrow, without the GIL).
    with ThreadPoolExecutor(max_workers=1) as pool:
        small_tables = pool.submit(_load_small_tables, root)
        build_flight_table(root / _SOURCES["flights"], cache / "flights")
        small = small_tables.result()
    for name, body in (("small.json", small), ("rendered.json", _render_all(small))):
        (cache / name).write_text(json.dumps(body, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return small


def _render_all(small: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Every city's tables as the official tools print them."""
    labels = small["restaurant_labels"]
    return {
        # The official RestaurantSearch alone prints pandas' row labels (``to_string()``).
        "restaurants": {c: render_table(Restaurant.COLUMNS, r, labels[c]) for c, r in small["restaurants"].items()},
        "accommodations": {c: render_table(Accommodation.COLUMNS, r) for c, r in small["accommodations"].items()},
        "attractions": {c: render_table(Attraction.COLUMNS, r) for c, r in small["attractions"].items()},
    }


def _read_rendered(path: Path | None) -> dict[str, dict[str, str]] | None:
    """The rendered tables of a checked cache (None: render them here instead)."""
    if path is None:
        return None
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(body, dict) and set(body) == set(_ROW_TYPES) and all(isinstance(v, dict) for v in body.values())
    return body if ok else None


def _read_cache(cache: Path) -> dict[str, Any] | None:
    """The small tables of a checked cache, or None when they are not what this version writes."""
    gc.disable()  # hundreds of thousands of small containers: the collector would rescan them all
    try:
        small = json.loads((cache / "small.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        gc.enable()
    if not isinstance(small, dict) or set(small) != _SMALL_KEYS:
        return None
    return small


_ROW_TYPES = {"accommodations": Accommodation, "restaurants": Restaurant, "attractions": Attraction}
_SMALL_KEYS = {"city_set", "state_set", "city_states", "restaurant_labels", "distances", *_ROW_TYPES}



def _load_small_tables(root: Path) -> dict[str, Any]:
    """Every table but the flights, as plain JSON-ready values (lists, dicts, str, int, float, None)."""
    src = {k: root / v for k, v in _SOURCES.items()}

    def table(name: str, row_type, *, dropna: bool = True):
        return read_table(src[name], row_type.COLUMNS, dropna=dropna, numeric=NUMERIC.get(name, ()),
                          rules=RULES.get(name), require_rows=name in _ROW_TYPES)

    city_states = [line.split("\t") for line in _lines(src["city_states"], pairs=True)]
    city_set, state_set = _lines(src["city_set"]), _lines(src["state_set"])
    _check_states(src, city_set, state_set, city_states)
    restaurants, restaurant_labels = _by_city(table("restaurants", Restaurant))
    return {
        "city_set": city_set,
        "state_set": state_set,
        "city_states": city_states,
        "accommodations": _by_city(table("accommodations", Accommodation))[0],
        "restaurants": restaurants,
        "restaurant_labels": restaurant_labels,
        "attractions": _by_city(table("attractions", Attraction))[0],
        "distances": _first_per_pair(table("distances", Distance, dropna=False)),
    }


def _lines(path: Path, *, pairs: bool = False) -> list[str]:
    """The non-blank lines of a list file (citySet.txt and the like); ``pairs``: each is ``city<TAB>state``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise unreadable(path, exc) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(path, data, exc) from None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if len(line) > MAX_CELL_CHARS:
            raise damaged(path, i + 1, f"the line holds more than {MAX_CELL_CHARS:,} characters")
        if pairs and line.strip() and line.count("\t") != 1:
            raise damaged(path, i + 1, f"the line is not 'city<TAB>state': {short_repr(line)}")
    kept = [line.rstrip("\r") for line in lines if line.strip()]
    if not kept:
        raise damaged(path, None, "the file holds no lines")
    return kept


def _check_states(src: dict[str, Path], city_set: list[str], state_set: list[str],
                  city_states: list[list[str]]) -> None:
    """Each city has a state, and each state is listed: the evaluator looks a plan's cities up in them
    (a list cut short in the middle of a name fails here)."""
    state_of = {city: state for city, state in city_states}
    city = next((c for c in city_set if c not in state_of), None)
    if city is not None:
        raise damaged(src["city_set"], None, f"the city {short_repr(city)} has no state in {src['city_states']}")
    known = set(state_set)
    city, state = next(((c, s) for c, s in city_states if s not in known), (None, None))
    if city is not None:
        raise damaged(src["city_states"], None,
                      f"the state {short_repr(state)} of {short_repr(city)} is not in {src['state_set']}")


def _by_city(rows: Iterable[tuple[Any, ...]]):
    """Rows grouped by city (the last column) in file order, and their pandas index labels likewise."""
    grouped: dict[str, list[list[Any]]] = {}
    labels: dict[str, list[int]] = {}
    for label, *values in rows:
        city = values[-1]
        grouped.setdefault(city, []).append(values)
        labels.setdefault(city, []).append(label)
    return grouped, labels


def _first_per_pair(rows: Iterable[tuple[Any, ...]]) -> list[list[str | None]]:
    """``[origin, destination, duration, distance]`` of the first row of each pair, as the official lookup takes it."""
    seen: set[tuple[str, str]] = set()
    pairs = []
    for _label, origin, dest, duration, distance in rows:
        if origin is None or dest is None:
            continue
        key = (str(origin), str(dest))
        if key not in seen:
            seen.add(key)
            pairs.append([key[0], key[1], _text(duration), _text(distance)])
    return pairs


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
