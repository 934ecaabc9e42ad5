"""TravelPlanner (Xie et al., ICML 2024): the env, its world, queries and tools."""

from agentgym.envs.travelplanner.env import TravelPlannerEnv
from agentgym.envs.travelplanner.queries import LocalConstraint, TravelQuery, load_queries
from agentgym.envs.travelplanner.world import World

__all__ = ["TravelPlannerEnv", "World", "TravelQuery", "LocalConstraint", "load_queries"]
