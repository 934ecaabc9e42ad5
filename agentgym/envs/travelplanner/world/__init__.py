"""The TravelPlanner database: open the CSV tables (parsed once into a cache), index them, render them.

``World`` holds one database; ``index.WorldIndex`` (``index.index_for``) the lookups the evaluator,
the solver and the generator share; ``render_table`` shows a table as the official tools do;
``cache`` keeps parsed worlds (the synthetic world installs itself there).
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
from agentgym.envs.travelplanner.world._render import render_table

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
    "render_table",
]
