"""World sizes and rates (``WorldScale``), the named presets, and the argument checks."""

from __future__ import annotations

from datetime import date
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from agentgym._deprecated import RenamedKeys, renamed_attribute
from agentgym._toolbox import is_int
from agentgym.envs.travelplanner.synthetic._vocab import STATES
from agentgym.errors import ConfigError

_FIELDS = RenamedKeys("WorldScale field", {"min_restaurants_per_query_cuisine": "min_restaurants_per_task_cuisine"})


class WorldScale(BaseModel):
    """Sizes and rates of a synthetic world. Counts "per city" are means (Poisson draws)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_states: int
    n_cities: int
    min_cities_per_state: int = 3
    route_fraction: float  # share of city pairs linked by flights (both directions)
    flights_per_route_day: float  # mean flights per route and day on linked pairs
    distance_pair_fraction: float  # share of inter-state pairs in the distance table
    distance_missing_fraction: float = 0.09  # rows with empty duration and distance
    distance_duplicate_fraction: float = 0.08  # rows repeated later in the file
    restaurants_per_city: float
    attractions_per_city: float
    accommodations_per_city: float
    min_restaurants_per_task_cuisine: int = 3  # per city, for each of the 7 cuisines tasks ask for
    empty_house_rules_fraction: float = 0.14
    train_per_group: int  # tasks per (level, days) group
    validation_per_group: int
    test_per_group: int
    first_date: date = date(2022, 3, 1)
    n_days: int = 31  # flights and trip dates cover first_date .. first_date + n_days - 1
    budget_slack_min: float = 0.1
    budget_slack_max: float = 0.4
    hard_transport_share: float = 0.85  # hard tasks carrying a transportation rule (official ~0.85)

    @model_validator(mode="before")
    @classmethod
    def _renamed_fields(cls, data: Any) -> Any:
        # stacklevel 5: the warning points at the caller of WorldScale(...)
        return _FIELDS.apply(data, stacklevel=5) if isinstance(data, dict) else data

    min_restaurants_per_query_cuisine = renamed_attribute("WorldScale", "min_restaurants_per_query_cuisine", "min_restaurants_per_task_cuisine")


SCALE_PRESETS: dict[str, WorldScale] = {
    "tiny": WorldScale(
        n_states=3, n_cities=9, route_fraction=0.6, flights_per_route_day=1.0,
        distance_pair_fraction=0.8, restaurants_per_city=12, attractions_per_city=7,
        accommodations_per_city=10, min_restaurants_per_task_cuisine=2,
        train_per_group=1, validation_per_group=1, test_per_group=1,
    ),
    "default": WorldScale(
        n_states=10, n_cities=50, route_fraction=0.25, flights_per_route_day=1.2,
        distance_pair_fraction=0.5, restaurants_per_city=30, attractions_per_city=18,
        accommodations_per_city=16, train_per_group=5, validation_per_group=20, test_per_group=10,
    ),
    "full": WorldScale(
        n_states=48, n_cities=312, route_fraction=0.33, flights_per_route_day=4.0,
        distance_pair_fraction=0.16, restaurants_per_city=30.6, attractions_per_city=17,
        accommodations_per_city=16.2, train_per_group=5, validation_per_group=20, test_per_group=111,
    ),
}

_FRACTIONS = ("route_fraction", "distance_pair_fraction", "distance_missing_fraction",
              "distance_duplicate_fraction", "empty_house_rules_fraction", "hard_transport_share")
_MINIMUM_RATES = (("flights_per_route_day", 0.0), ("restaurants_per_city", 8.0),
                  ("attractions_per_city", 5.0), ("accommodations_per_city", 1.0))
_COUNTS = ("train_per_group", "validation_per_group", "test_per_group", "min_restaurants_per_task_cuisine")


def resolve_scale(scale: str | WorldScale) -> WorldScale:
    """The preset named by ``scale`` (or ``scale`` itself), checked for sizes it cannot honour."""
    if isinstance(scale, WorldScale):
        sc = scale
    elif isinstance(scale, str) and scale in SCALE_PRESETS:
        sc = SCALE_PRESETS[scale]
    else:
        raise ConfigError("scale", scale, [*SCALE_PRESETS, "a WorldScale"])
    _check_geography(sc)
    _check_rates(sc)
    _check_calendar(sc)
    return sc


def check_seed(seed: Any) -> int:
    if not (is_int(seed) or isinstance(seed, np.integer)) or seed < 0:
        raise ConfigError("seed", seed, "a non-negative int")
    return int(seed)


def _check_geography(sc: WorldScale) -> None:
    if not 2 <= sc.n_states <= len(STATES):
        raise ConfigError("n_states", sc.n_states, f"an int in [2, {len(STATES)}]")
    if sc.min_cities_per_state < 3:
        raise ConfigError("min_cities_per_state", sc.min_cities_per_state,
                          "an int >= 3 (7-day trips visit 3 cities)")
    if sc.n_cities < sc.n_states * sc.min_cities_per_state:
        raise ConfigError("n_cities", sc.n_cities,
                          f">= n_states * min_cities_per_state = {sc.n_states * sc.min_cities_per_state}")


def _check_rates(sc: WorldScale) -> None:
    for name in _FRACTIONS:
        value = getattr(sc, name)
        if not 0.0 <= value <= 1.0:
            raise ConfigError(name, value, "a float in [0, 1]")
    for name, low in _MINIMUM_RATES:
        value = getattr(sc, name)
        if not value >= low:
            raise ConfigError(name, value, f"a number >= {low}")
    for name in _COUNTS:
        value = getattr(sc, name)
        if value < 0:
            raise ConfigError(name, value, "an int >= 0")


def _check_calendar(sc: WorldScale) -> None:
    if sc.n_days < 7:
        raise ConfigError("n_days", sc.n_days, "an int >= 7 (7-day trips)")
    if not 0.0 <= sc.budget_slack_min <= sc.budget_slack_max:
        raise ConfigError("budget_slack_min", sc.budget_slack_min,
                          f"a float in [0, budget_slack_max={sc.budget_slack_max}]")
