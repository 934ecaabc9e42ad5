"""TravelPlanner's evaluator: the official checks (``_commonsense``, ``_hard``), the strict ones
(``_strict``, ``_strict_hard`` over ``_strict_plan``), the metrics, and reading submission files
(``submissions``).
"""

from agentgym.envs.travelplanner.evaluation._evaluate import (
    COMMONSENSE,
    ERROR_PREFIX,
    EVALUATIONS,
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
    "COMMONSENSE", "HARD", "EVALUATIONS", "OFFICIAL_METRIC_NAMES", "hard_denominator", "ERROR_PREFIX",
]
