"""TravelPlanner (Xie et al., ICML 2024): the env, its world, queries and tools, the evaluator,
the exact solver, the query generator and the scripted actions (the agents are ``agentgym.agents``).

Every name loads on first use, so importing one part (the world, say) does not pull in the env,
its reward code or the search code.
"""

from agentgym._deprecated import module_aliases as _module_aliases
from agentgym._lazy import lazy_names as _lazy_names

_LAZY = {
    "TravelPlannerEnv": "agentgym.envs.travelplanner.env",
    **dict.fromkeys(("EvaluationReport", "Metrics", "aggregate", "evaluate"), "agentgym.envs.travelplanner.evaluation"),
    **dict.fromkeys(("LocalConstraint", "TravelQuery", "load_queries"), "agentgym.envs.travelplanner.queries"),
    "World": "agentgym.envs.travelplanner.world",
    "solve": "agentgym.envs.travelplanner.solver",
    "generate_queries": "agentgym.envs.travelplanner.generator",
    "GeneratorConfig": "agentgym.envs.travelplanner.generator",
    **dict.fromkeys(("solver_actions", "gold_plan_actions"), "agentgym.envs.travelplanner.scripted"),
}


__all__ = list(_LAZY)
_lazy_getattr, __dir__ = _lazy_names(__name__, {**_LAZY, "OracleAgent": "agentgym.envs.travelplanner.oracle"}, __all__)
__getattr__ = _module_aliases(__name__, {"reference_plan_actions": "gold_plan_actions"}, _lazy_getattr)
