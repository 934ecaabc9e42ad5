"""The query splits: draw a spec, build its reference plan, retry until feasible, then price it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agentgym.envs.travelplanner.synthetic._model import World
from agentgym.envs.travelplanner.synthetic._plans import build_plan
from agentgym.envs.travelplanner.synthetic._scale import WorldScale
from agentgym.envs.travelplanner.synthetic._specs import LEVELS, TRIP_DAYS, Spec, draw_spec
from agentgym.envs.travelplanner.synthetic._text import query_text
from agentgym.errors import DataError

_MAX_ATTEMPTS = 2000


def make_splits(world: World, sc: WorldScale, rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """train / validation / test rows, each ordered easy 3/5/7, medium 3/5/7, hard 3/5/7."""
    multi_city_states = [s for s, cs in enumerate(world.cities_in_state) if len(cs) >= 3]
    per_group = {"train": sc.train_per_group, "validation": sc.validation_per_group, "test": sc.test_per_group}
    return {split: [_make_query(world, sc, rng, multi_city_states, level, days)
                    for level in LEVELS for days in TRIP_DAYS for _ in range(count)]
            for split, count in per_group.items()}


def _make_query(world: World, sc: WorldScale, rng: np.random.Generator, multi_city_states: list[int],
                level: str, days: int) -> dict[str, Any]:
    """Retry specs until one is feasible in this world, so every query is solvable."""
    for _ in range(_MAX_ATTEMPTS):
        spec = draw_spec(rng, world, sc, multi_city_states, level, days)
        built = build_plan(world, rng, spec)
        if built is not None:
            return _row(world, sc, rng, spec, *built)
    raise DataError(f"no feasible {level} {days}-day query after {_MAX_ATTEMPTS} attempts; "
                    f"the world is too sparse (raise route_fraction or distance_pair_fraction)")


def _row(world: World, sc: WorldScale, rng: np.random.Generator, spec: Spec,
         plan: list[dict[str, Any]], total: float) -> dict[str, Any]:
    """The query in the Hugging Face field format; budget = plan cost plus slack, up to $100."""
    slack = rng.uniform(sc.budget_slack_min, sc.budget_slack_max)
    budget = int(math.ceil(total * (1.0 + slack) / 100.0)) * 100
    dates = world.dates[spec.start: spec.start + spec.days]
    org = world.cities[spec.org]
    query = query_text(rng, org, spec, dates, budget)
    meta = {"org": org, "dest": spec.dest, "days": spec.days,
            "visiting_city_number": len(spec.cities), "date": dates, "people_number": spec.people,
            "local_constraint": spec.constraint, "budget": budget, "query": query, "level": spec.level}
    padded = plan + [{} for _ in range(7 - len(plan))]
    return {**meta, "date": repr(dates), "local_constraint": repr(spec.constraint),
            "annotated_plan": repr([meta, padded]), "reference_information": ""}
