"""Moved: the scripted actions are ``agentgym.envs.travelplanner.scripted``, the agent is
``agentgym.agents.SolverAgent``; these old names go in 0.3."""

from agentgym._deprecated import alias, module_aliases
from agentgym.agents.scripted import SolverAgent  # noqa: F401
from agentgym.envs.travelplanner.scripted import gold_plan_actions, plan_actions, solver_actions  # noqa: F401

__getattr__ = module_aliases(__name__, {"OracleAgent": "SolverAgent", "oracle_actions": "solver_actions",
                                        "reference_plan_actions": "gold_plan_actions"})
alias("module", __name__, "agentgym.envs.travelplanner.scripted")
