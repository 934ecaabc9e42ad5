"""The TravelPlanner database: open the CSV tables (parsed once into a cache), index them, render them.

``World`` holds one database; ``WorldIndex`` (``index_for``) the lookups the evaluator and solver share.
"""

from agentgym.envs.travelplanner.world._database import (
    CACHE_ENV_VAR,
    DATABASE_ENV_VAR,
    Accommodation,
    Attraction,
    Distance,
    Flight,
    Restaurant,
    World,
    cache_base,
)

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
