"""TravelPlanner (Xie et al., ICML 2024): the env, its world, tasks and tools, the evaluator,
the exact solver, the task generator and the scripted actions (the agents are ``agentgym.agents``).

A logged episode re-evaluates offline under another evaluator from public parts: ``parse_plan``
reads its answer, ``evaluate(plan, task, world, evaluator="official")`` scores it, and
``plan_actions(task, plan)`` turns a plan back into the actions that play it;
``env.unwrapped.task_context(task_id)`` gives reward terms the task and that re-evaluation.

Every name loads on first use, so importing one part (the world, say) does not pull in the env,
its reward code or the search code.
"""

from agentgym._deprecated import module_aliases as _module_aliases
from agentgym._lazy import lazy_names as _lazy_names

_LAZY = {
    "TravelPlannerEnv": "agentgym.envs.travelplanner.env",
    **dict.fromkeys(("EvaluationReport", "Metrics", "aggregate", "evaluate"), "agentgym.envs.travelplanner.evaluation"),
    **dict.fromkeys(("LocalConstraint", "TravelTask", "load_tasks"), "agentgym.envs.travelplanner.tasks"),
    "World": "agentgym.envs.travelplanner.world",
    "solve": "agentgym.envs.travelplanner.solver",
    "generate_tasks": "agentgym.envs.travelplanner.generator",
    "GeneratorConfig": "agentgym.envs.travelplanner.generator",
    **dict.fromkeys(("solver_actions", "gold_plan_actions", "plan_actions"), "agentgym.envs.travelplanner.scripted"),
    **dict.fromkeys(("parse_plan", "ParsedPlan", "Plan", "PlanDay"), "agentgym.envs.travelplanner.plan"),
}


__all__ = list(_LAZY)
_lazy_getattr, __dir__ = _lazy_names(__name__, {**_LAZY, "OracleAgent": "agentgym.envs.travelplanner.oracle"}, __all__)
__getattr__ = _module_aliases(__name__, {"reference_plan_actions": "gold_plan_actions", "TravelQuery": "TravelTask",
                                         "load_queries": "load_tasks", "generate_queries": "generate_tasks"},
                              _lazy_getattr)
