"""TravelPlanner (Xie et al., ICML 2024): the env, its world, queries and tools, the evaluator,
the exact solver, the query generator and the scripted agents.

The solver, generator and agents load on first use (they pull in the search code).
"""

from importlib import import_module as _import_module

from agentgym.envs.travelplanner.env import TravelPlannerEnv
from agentgym.envs.travelplanner.evaluation import EvaluationReport, Metrics, aggregate, evaluate
from agentgym.envs.travelplanner.queries import LocalConstraint, TravelQuery, load_queries
from agentgym.envs.travelplanner.world import World

_LAZY = {
    "solve": "agentgym.envs.travelplanner.solver",
    "generate_queries": "agentgym.envs.travelplanner.generator",
    "GeneratorConfig": "agentgym.envs.travelplanner.generator",
    "OracleAgent": "agentgym.envs.travelplanner.oracle",
    "reference_plan_actions": "agentgym.envs.travelplanner.oracle",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'agentgym.envs.travelplanner' has no attribute {name!r}")


__all__ = ["TravelPlannerEnv", "World", "TravelQuery", "LocalConstraint", "load_queries", "evaluate", "aggregate",
           "EvaluationReport", "Metrics", *_LAZY]
