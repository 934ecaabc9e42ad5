"""TravelPlanner (Xie et al., ICML 2024): the env, its world, queries and tools, the evaluator,
the exact solver, the query generator and the scripted agents.

Every name loads on first use, so importing one part (the world, say) does not pull in the env,
its reward code or the search code.
"""

from importlib import import_module as _import_module

_LAZY = {
    "TravelPlannerEnv": "agentgym.envs.travelplanner.env",
    **dict.fromkeys(("EvaluationReport", "Metrics", "aggregate", "evaluate"), "agentgym.envs.travelplanner.evaluation"),
    **dict.fromkeys(("LocalConstraint", "TravelQuery", "load_queries"), "agentgym.envs.travelplanner.queries"),
    "World": "agentgym.envs.travelplanner.world",
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


__all__ = list(_LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)
