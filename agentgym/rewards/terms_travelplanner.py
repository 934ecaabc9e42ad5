"""TravelPlanner terms (Planner-R1's process-level rewards) read from the evaluator's report.

Each reads the final ``EvaluationReport`` (as a dict) of its ``evaluation``: ``strict`` (default,
no loopholes) or ``official`` (the official evaluator's verdicts). When the env evaluated with
the other one, the episode re-evaluates the plan. An episode that ended without a plan is
scored like an undelivered plan: every constraint fails, as in the official metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator

from agentgym.errors import ConfigError
from agentgym.rewards._base import TermSpec
from agentgym.rewards._registry import Abstain, abstain, term

__all__ = [
    "Schema", "CommonsenseMicro", "HardMicro", "CommonsenseMacro", "HardMacro", "FinalPass", "Constraint",
    "plan_schema_error",
]

_PLAN_KEYS = frozenset(("days", "current_city", "transportation", "breakfast", "attraction", "lunch", "dinner",
                        "accommodation"))
# Which query field makes each local hard constraint apply (the budget always applies).
_LOCAL_FIELD = {"valid_room_rule": "house_rule", "valid_cuisine": "cuisine", "valid_room_type": "room_type",
                "valid_transportation": "transportation"}


class _ReportTerm(TermSpec):
    guarded = True
    needs = frozenset({"travelplanner"})
    # ``mode`` is the name 0.1.0 used; it is still read, for one release.
    evaluation: Literal["strict", "official"] = Field("strict", validation_alias=AliasChoices("evaluation", "mode"))
    """The evaluator whose report the term reads: ``strict`` (no loopholes) or ``official``."""


def _missing(evaluation: str) -> Abstain:
    return abstain(f"no TravelPlanner evaluation report of the {evaluation!r} evaluation")


_NO_REPORT = abstain("no TravelPlanner evaluation report")
_FOREIGN = abstain("the report is not a TravelPlanner evaluation report")


def _read(report: Mapping[str, Any] | None, key: str) -> Any:
    """``report[key]``, or an abstention when there is no report or it is not a TravelPlanner one."""
    if report is None:
        return _NO_REPORT
    if not isinstance(report, Mapping) or key not in report:
        return _FOREIGN
    return report[key]


class Schema(TermSpec):
    """1.0 iff the answer is a plan in the official day-dict schema; else 0.0."""

    guarded = True
    kind: Literal["schema"] = "schema"


@term(Schema)
def schema_valid(plan: Any, task: Any) -> float:
    return 0.0 if plan_schema_error(plan, _days_of(task)) else 1.0


def plan_schema_error(plan: Any, days: int | None) -> str | None:
    """Why a parsed plan breaks the schema, or None. Trailing ``{}`` padding is allowed.

    The schema: a list of exactly ``days`` day objects (any number >= 1 when unknown), each with
    exactly the 8 official keys, ``days`` running 1, 2, ... as ints, every other value a non-empty string.
    """
    if not plan.delivered or not isinstance(plan.days, list):
        return plan.reason or "no plan"
    entries = list(plan.days)
    while entries and entries[-1] == {}:
        entries.pop()
    if not entries or (days is not None and len(entries) != days):
        return f"expected {days} day objects, got {len(entries)}"
    for i, day in enumerate(entries, 1):
        if not isinstance(day, dict) or day.keys() != _PLAN_KEYS:
            return f"day {i} does not have exactly the keys {sorted(_PLAN_KEYS)}"
        if type(day["days"]) is not int or day["days"] != i:
            return f"day {i} has days={day['days']!r}"
        if any(not isinstance(v, str) or not v.strip() for k, v in day.items() if k != "days"):
            return f"day {i} has a value that is not a non-empty string"
    return None


def _days_of(task: Any) -> int | None:
    if task is None:
        return None
    days = task.get("days") if isinstance(task, Mapping) else getattr(task, "days", None)
    return days if isinstance(days, int) else None


class CommonsenseMicro(_ReportTerm):
    """Share of the 8 commonsense constraints the plan passes."""

    kind: Literal["commonsense_micro"] = "commonsense_micro"


@term(CommonsenseMicro)
def commonsense_micro(report: Mapping[str, Any] | None) -> float | Abstain:
    value = _read(report, "commonsense_micro")
    return value if isinstance(value, Abstain) else float(value)


class HardMicro(_ReportTerm):
    """Share of the query's applicable hard constraints the plan passes (0 when they were not checked)."""

    kind: Literal["hard_micro"] = "hard_micro"


@term(HardMicro)
def hard_micro(report: Mapping[str, Any] | None) -> float | Abstain:
    value = _read(report, "hard_micro")
    return value if isinstance(value, Abstain) else float(value)


class CommonsenseMacro(_ReportTerm):
    """1.0 iff the plan passes every commonsense constraint."""

    kind: Literal["commonsense_macro"] = "commonsense_macro"


@term(CommonsenseMacro)
def commonsense_macro(report: Mapping[str, Any] | None) -> float | Abstain:
    value = _read(report, "commonsense_pass")
    return value if isinstance(value, Abstain) else float(value is True)


class HardMacro(_ReportTerm):
    """1.0 iff the hard constraints were checked and the plan passes all that apply."""

    kind: Literal["hard_macro"] = "hard_macro"


@term(HardMacro)
def hard_macro(report: Mapping[str, Any] | None) -> float | Abstain:
    value = _read(report, "hard_pass")
    return value if isinstance(value, Abstain) else float(value is True)


class FinalPass(_ReportTerm):
    """1.0 iff the plan passes every commonsense and every applicable hard constraint."""

    kind: Literal["final_pass"] = "final_pass"


@term(FinalPass)
def final_pass(report: Mapping[str, Any] | None) -> float | Abstain:
    value = _read(report, "final_pass")
    return value if isinstance(value, Abstain) else float(value is True)


class Constraint(_ReportTerm):
    """One constraint by name: 1.0 pass, 0.0 fail, abstains when it does not apply to the query."""

    kind: Literal["constraint"] = "constraint"
    constraint: str
    """A commonsense (``is_valid_restaurants``, ...) or hard (``valid_cost``, ...) constraint name."""

    @field_validator("constraint")
    @classmethod
    def _known(cls, name: str) -> str:
        from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD

        if name not in COMMONSENSE + HARD:
            raise ConfigError("constraint", name, COMMONSENSE + HARD)
        return name

    def default_name(self) -> str:
        return self.constraint


@term(Constraint)
def constraint_passed(report: Mapping[str, Any] | None, task: Any, config: Constraint) -> float | Abstain:
    if report is None:
        return _missing(config.evaluation)
    name = config.constraint
    if not isinstance(report, Mapping) or not isinstance(report.get("commonsense"), Mapping):
        return _FOREIGN
    group = report["commonsense"] if name in report["commonsense"] else report.get("hard")
    if group is None:  # the hard box was gated off: applicable constraints count as failed
        return abstain(f"{name} does not apply to this query") if not _applies(name, task) else 0.0
    passed = group[name]["passed"]
    return abstain(f"{name} does not apply to this query") if passed is None else float(passed)


def _applies(name: str, task: Any) -> bool:
    field = _LOCAL_FIELD.get(name)
    if field is None or task is None:
        return True
    local = getattr(task, "local_constraint", None)
    return local is None or getattr(local, field, None) is not None
