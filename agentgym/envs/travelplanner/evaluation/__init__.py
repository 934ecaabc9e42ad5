"""TravelPlanner's evaluator: the official checks (``_commonsense``, ``_hard``), the strict ones
(``_strict``, ``_strict_hard`` over ``_strict_plan``), the metrics, and reading submission files
(``submissions``).
"""

from agentgym._deprecated import module_aliases as _module_aliases
from agentgym.envs.travelplanner.evaluation._hard import RULE_TEXT, room_type_ok
from agentgym.envs.travelplanner.evaluation._evaluate import (
    COMMONSENSE,
    ERROR_PREFIX,
    EVALUATORS,
    HARD,
    OFFICIAL_METRIC_NAMES,
    EvaluationReport,
    Metrics,
    MetricSet,
    Verdict,
    aggregate,
    evaluate,
    hard_denominator,
    official_plan,
)

__all__ = [
    "evaluate", "official_plan", "aggregate", "Verdict", "EvaluationReport", "MetricSet", "Metrics",
    "COMMONSENSE", "HARD", "EVALUATORS", "OFFICIAL_METRIC_NAMES", "hard_denominator", "ERROR_PREFIX",
    "RULE_TEXT", "room_type_ok",
]

__getattr__ = _module_aliases(__name__, {"EVALUATIONS": "EVALUATORS"})
