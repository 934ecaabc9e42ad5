"""Writing a world in the official release layout: database tables, background lists, queries."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentgym.envs.travelplanner.synthetic._flights import write_flights
from agentgym.envs.travelplanner.synthetic._model import DrawnWorld

_HOTEL_HEADER = ("", "NAME", "room type", "price", "minimum nights", "review rate number",
                 "house_rules", "maximum occupancy", "city")
_RESTAURANT_HEADER = ("", "Name", "City", "Cuisines", "Average Cost", "Aggregate Rating")
_ATTRACTION_HEADER = ("Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City")
_DISTANCE_HEADER = ("origin", "destination", "cost", "duration", "distance")
_QUERY_FIELDS = ("org", "dest", "days", "visiting_city_number", "date", "people_number",
                 "local_constraint", "budget", "query", "level", "annotated_plan",
                 "reference_information")


def write_database(db: Path, world: DrawnWorld, rng: np.random.Generator) -> None:
    """Every table under ``database/``; the shuffles draw from ``rng`` in a fixed order."""
    cities = world.cities
    write_flights(db / "flights" / "clean_Flights_2022.csv", world)
    _write_indexed(db / "accommodations" / "clean_accommodations_2022.csv", _HOTEL_HEADER, rng, (
        (h.name, h.room_type, f"{h.price:.1f}", f"{h.min_nights:.1f}", f"{h.review:.1f}", h.rules,
         h.occupancy, cities[c])
        for c, rows in enumerate(world.hotels) for h in rows))
    _write_indexed(db / "restaurants" / "clean_restaurant_2022.csv", _RESTAURANT_HEADER, rng, (
        (r.name, cities[c], ", ".join(r.cuisines), r.cost, f"{r.rating:.1f}")
        for c, rows in enumerate(world.restaurants) for r in rows))
    _write_rows(db / "attractions" / "attractions.csv", _ATTRACTION_HEADER, [
        (a.name, f"{a.lat:.7f}", f"{a.lon:.7f}", a.address, a.phone, a.website, cities[c])
        for c, rows in enumerate(world.attractions) for a in rows])
    _write_rows(db / "googleDistanceMatrix" / "distance.csv", _DISTANCE_HEADER, [
        (cities[o], cities[d], "", road.duration, road.distance) for o, d, road in world.road_rows])
    _write_background(db / "background", world, rng)


def write_queries(folder: Path, splits: dict[str, list[dict[str, Any]]]) -> None:
    """One JSON line per query, fields in the Hugging Face order."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8", newline="\n") as f:
            for row in rows:
                f.write(json.dumps({k: row[k] for k in _QUERY_FIELDS}) + "\n")


def _write_rows(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def _write_indexed(path: Path, header: Sequence[str], rng: np.random.Generator,
                   rows: Iterable[tuple[Any, ...]]) -> None:
    """Tables with the unnamed pandas index column; rows shuffled so cities interleave like
    the official files."""
    rows = list(rows)
    order = rng.permutation(len(rows)).tolist()
    _write_rows(path, header, ((i, *rows[j]) for i, j in enumerate(order)))


def _write_background(folder: Path, world: DrawnWorld, rng: np.random.Generator) -> None:
    """citySet, citySet_with_states and stateSet, each in a shuffled order, with the official files' line ends."""
    folder.mkdir(parents=True, exist_ok=True)
    order = rng.permutation(len(world.cities)).tolist()
    cities = [world.cities[c] for c in order]
    (folder / "citySet.txt").write_text("".join(c + "\n" for c in cities), encoding="utf-8")
    # No final newline, as in the official release: the official evaluator splits this file on
    # "\n" and unpacks every piece as city<TAB>state, so a trailing newline makes it raise.
    (folder / "citySet_with_states.txt").write_text(
        "\n".join(f"{world.cities[c]}\t{world.states[world.city_state[c]]}" for c in order), encoding="utf-8")
    states = [world.states[s] for s in rng.permutation(len(world.states)).tolist()]
    (folder / "stateSet.txt").write_text("".join(s + "\n" for s in states), encoding="utf-8")
