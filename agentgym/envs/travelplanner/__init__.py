"""TravelPlanner (Xie et al., ICML 2024): the env, its world, queries and tools, the evaluator,
the exact solver, the query generator and the scripted agents.

Every name loads on first use, so importing one part (the world, say) does not pull in the env,
its reward code or the search code.
"""

from agentgym._lazy import lazy_names as _lazy_names

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


__all__ = list(_LAZY)
__getattr__, __dir__ = _lazy_names(__name__, _LAZY, __all__)
