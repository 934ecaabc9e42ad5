"""The entry point: build the in-memory world from one seeded generator, then write it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np

from agentgym.envs.travelplanner.synthetic._flights import make_flights
from agentgym.envs.travelplanner.synthetic._geography import (
    KM_PER_DEG_LAT,
    KM_PER_DEG_LON,
    cities_per_state,
    city_names,
    pick_states,
    place_cities,
)
from agentgym.envs.travelplanner.synthetic._model import DrawnWorld
from agentgym.envs.travelplanner.synthetic._tasks import make_splits
from agentgym.envs.travelplanner.synthetic._roads import first_roads, make_roads
from agentgym.envs.travelplanner.synthetic._scale import WorldScale, check_seed, resolve_scale
from agentgym.envs.travelplanner.synthetic._venues import make_attractions, make_hotels, make_restaurants
from agentgym.envs.travelplanner.synthetic._vocab import STATES
from agentgym.envs.travelplanner.synthetic._write import write_database, write_queries


def generate_world(out_dir: str | Path, *, seed: int = 0, scale: str | WorldScale = "default",
                   progress: Callable[[str], None] | None = None) -> Path:
    """Write a synthetic world under out_dir in the official layout and return out_dir.

    ``progress`` is called with a line as each stage starts (the full scale takes tens of seconds)."""
    sc = resolve_scale(scale)
    rng = np.random.default_rng(check_seed(seed))
    out = Path(out_dir)
    say = progress or (lambda line: None)
    world = _build_world(rng, sc, say)
    say(f"writing the database ({len(world.flights.number):,} flights)")
    write_database(out / "database", world, rng)
    write_queries(out / "queries", make_splits(out, sc, rng, say))
    return out


def _build_world(rng: np.random.Generator, sc: WorldScale, say: Callable[[str], None]) -> DrawnWorld:
    """Every table in memory; the draw order is part of the output format (do not reorder)."""
    say(f"drawing {sc.n_cities} cities in {sc.n_states} states, their listings, restaurants, attractions "
        "and roads")
    states = pick_states(rng, sc.n_states)
    counts = cities_per_state(rng, sc, states)
    xy = place_cities(rng, states, counts)
    city_state = np.repeat(np.arange(len(states)), counts)
    names = city_names(rng, len(xy))
    lat, lon = xy[:, 1] / KM_PER_DEG_LAT, xy[:, 0] / KM_PER_DEG_LON
    abbr = [STATES[states[s]][1] for s in city_state.tolist()]
    hotels = make_hotels(rng, sc, len(names))
    restaurants = make_restaurants(rng, sc, len(names))
    attractions = make_attractions(rng, sc, names, abbr, lat, lon)
    road_rows = make_roads(rng, sc, xy, city_state)
    say("drawing the flights")
    flights = make_flights(rng, sc, xy, city_state)
    dates = [(sc.first_date + timedelta(days=i)).isoformat() for i in range(sc.n_days)]
    world = DrawnWorld(
        states=[STATES[s][0] for s in states], state_abbr=[STATES[s][1] for s in states],
        cities=names, city_state=city_state.tolist(), lat=lat, lon=lon, hotels=hotels,
        restaurants=restaurants, attractions=attractions, road_rows=road_rows,
        roads=first_roads(road_rows), flights=flights, dates=dates,
    )
    world.cities_in_state = [[c for c, s in enumerate(world.city_state) if s == k] for k in range(len(states))]
    return world
