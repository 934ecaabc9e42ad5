"""TravelPlanner terms (Planner-R1's process-level rewards) read from the evaluator's report.

Each reads the final ``EvaluationReport`` (checked once per episode) of its ``evaluator``: ``strict`` (default,
no loopholes) or ``official`` (the official evaluator's verdicts). When the env evaluated with
the other one, the episode re-evaluates the plan. An episode that ended without a plan is
scored like an undelivered plan: every constraint fails, as in the official metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any, ClassVar, Literal

from pydantic import field_validator, model_validator

from agentgym._deprecated import RenamedKeys
from agentgym.errors import ConfigError
from agentgym.rewards import _travelplanner_read as read
from agentgym.rewards._base import TermSpec
from agentgym.rewards._registry import Abstain, abstain, episode_input, term

__all__ = [
    "Schema", "CommonsenseMicro", "HardMicro", "CommonsenseMacro", "HardMacro", "FinalPass", "Constraint",
    "plan_schema_error",
]

_PLAN_KEYS = frozenset(("days", "current_city", "transportation", "breakfast", "attraction", "lunch", "dinner",
                        "accommodation"))
_SORTED_KEYS = str(sorted(_PLAN_KEYS))  # as the error message shows them
# Which query field makes each local hard constraint apply (the budget always applies).
_LOCAL_FIELD = {"valid_room_rule": "house_rule", "valid_cuisine": "cuisine", "valid_room_type": "room_type",
                "valid_transportation": "transportation"}


class _ReportTerm(TermSpec):
    guarded = True
    needs = frozenset({"travelplanner"})
    read_report = staticmethod(read.checked_report)
    evaluator: Literal["strict", "official"] = "strict"
    """The evaluator whose report the term reads: ``strict`` (no loopholes) or ``official``."""

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.keys().isdisjoint(_OLD_KEYS.renames):
            return _OLD_KEYS.apply(data, stacklevel=7)
        return data


_OLD_KEYS = RenamedKeys("TravelPlanner reward term key", {"mode": "evaluator", "evaluation": "evaluator"})
"""``mode`` (0.1.0) and ``evaluation`` (0.1) still name the evaluator, until 0.3."""


def _missing(evaluator: str) -> Abstain:
    return abstain(f"no TravelPlanner evaluation report of the {evaluator!r} evaluator")


_NO_REPORT = abstain("no TravelPlanner evaluation report")


@episode_input("plan", "the submitted TravelPlanner plan, as parse_plan reads it", needs="travelplanner")
def read_plan(episode: Any) -> Any:
    """The episode's answer read as a TravelPlanner plan (``ParsedPlan``)."""
    return read.plan_of(episode.answer)


class Schema(TermSpec):
    """1.0 iff the answer is a plan in the official day-dict schema; else 0.0."""

    guarded = True
    needs = frozenset({"travelplanner"})
    kind: Literal["schema"] = "schema"


@term(Schema)
def schema_valid(answer: str | None, task: Any) -> float:
    # The answer, read here and dropped, rather than the episode's cached ``plan`` input: a
    # batch then does not keep every parsed plan alive for the garbage collector to re-scan.
    days = _days_of(task)
    records = read.day_records(answer)
    if records is not None:
        # Objects with official keys only: parse_plan delivers such a list as it is.
        return 0.0 if _day_records_error(records, days) else 1.0
    listed = read.listed(answer)
    if listed is not None and len(listed) != 2:
        # parse_plan delivers such a list's entries as they are too (only a 2-item list can be
        # its [query, days] form), so they are checked without making a ParsedPlan.
        return 0.0 if _day_list_error(listed, days) else 1.0
    return 0.0 if plan_schema_error(read.parse_plan(answer if listed is None else listed), days) else 1.0


def plan_schema_error(plan: Any, days: int | None) -> str | None:
    """Why a parsed plan breaks the schema, or None. Trailing ``{}`` padding is allowed.

    The schema: a list of exactly ``days`` day objects (any number >= 1 when unknown), each with
    exactly the 8 official keys, ``days`` running 1, 2, ... as ints, every other value a non-empty string.
    """
    if not plan.delivered or not isinstance(plan.days, list):
        return plan.reason or "no plan"
    return _day_list_error(plan.days, days)


def _day_list_error(entries: list[Any], days: int | None) -> str | None:
    n = len(entries)
    while n and entries[n - 1] == {}:
        n -= 1
    if not n or (days is not None and n != days):
        return f"expected {days} day objects, got {n}"
    for i in range(1, n + 1):  # plain loops: this runs for every shaped plan
        day = entries[i - 1]
        if not isinstance(day, dict) or day.keys() != _PLAN_KEYS:
            return f"day {i} does not have exactly the keys {_SORTED_KEYS}"
        number = day["days"]
        if type(number) is not int or number != i:
            return f"day {i} has days={number!r}"
        for key, value in day.items():
            if key != "days" and (not isinstance(value, str) or not value.strip()):
                return f"day {i} has a value that is not a non-empty string"
    return None


def _day_records_error(records: list[Any], days: int | None) -> bool:
    """Whether ``_day_list_error`` finds an error in the objects ``records`` were decoded from."""
    n = len(records)
    while n and read.is_empty_day(records[n - 1]):  # trailing {} padding
        n -= 1
    if not n or (days is not None and n != days):
        return True
    for i in range(n):
        day = records[i]
        # A key the object lacks reads as a blank value: such a day fails either way.
        if type(day.days) is not int or day.days != i + 1 or not (
                day.current_city.strip() and day.transportation.strip() and day.breakfast.strip()
                and day.attraction.strip() and day.lunch.strip() and day.dinner.strip()
                and day.accommodation.strip()):
            return True
    return False


def _days_of(task: Any) -> int | None:
    if task is None:
        return None
    days = task.get("days") if _is_mapping(type(task)) else getattr(task, "days", None)
    return days if isinstance(days, int) else None


@lru_cache(maxsize=64)
def _is_mapping(cls: type) -> bool:
    return issubclass(cls, Mapping)  # once per type: an ABC check is slow next to the rest of the term


class _Summary(_ReportTerm):
    """A term that is one of the report's summary figures, named by ``figure``."""

    figure: ClassVar[str]


class CommonsenseMicro(_Summary):
    """Share of the 8 commonsense constraints the plan passes."""

    kind: Literal["commonsense_micro"] = "commonsense_micro"
    figure = "commonsense_micro"


class HardMicro(_Summary):
    """Share of the query's applicable hard constraints the plan passes (0 when they were not checked)."""

    kind: Literal["hard_micro"] = "hard_micro"
    figure = "hard_micro"


class CommonsenseMacro(_Summary):
    """1.0 iff the plan passes every commonsense constraint."""

    kind: Literal["commonsense_macro"] = "commonsense_macro"
    figure = "commonsense_pass"


class HardMacro(_Summary):
    """1.0 iff the hard constraints were checked and the plan passes all that apply."""

    kind: Literal["hard_macro"] = "hard_macro"
    figure = "hard_pass"


class FinalPass(_Summary):
    """1.0 iff the plan passes every commonsense and every applicable hard constraint."""

    kind: Literal["final_pass"] = "final_pass"
    figure = "final_pass"


def report_figure(report: Any, config: _Summary) -> float | Abstain:
    """The summary figure ``config`` names (a pass counts 1.0), of the report of its evaluator."""
    if report is None:
        return _NO_REPORT
    return report if isinstance(report, Abstain) else float(report[config.figure])


for _spec in (CommonsenseMicro, HardMicro, CommonsenseMacro, HardMacro, FinalPass):
    term(_spec)(report_figure)


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
def constraint_passed(report: Any, task: Any, config: Constraint) -> float | Abstain:
    if report is None:
        return _missing(config.evaluator)
    if isinstance(report, Abstain):
        return report
    name = config.constraint
    commonsense = report["commonsense"]
    group = commonsense if name in commonsense else report["hard"]
    if group is None:  # the hard box was gated off: applicable constraints count as failed
        return _does_not_apply(name) if not _applies(name, task) else 0.0
    passed = group[name]["passed"]
    return _does_not_apply(name) if passed is None else float(passed)


@cache
def _does_not_apply(name: str) -> Abstain:
    return abstain(f"{name} does not apply to this task")


def _applies(name: str, task: Any) -> bool:
    field = _LOCAL_FIELD.get(name)
    if field is None or task is None:
        return True
    local = getattr(task, "local_constraint", None)
    return local is None or getattr(local, field, None) is not None
