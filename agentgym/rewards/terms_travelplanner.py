"""TravelPlanner terms (Planner-R1's process-level rewards) read from the evaluator's report.

Each reads the final ``EvaluationReport`` (checked once per episode) of its ``evaluator``: ``strict`` (default,
no loopholes) or ``official`` (the official evaluator's verdicts). When the env evaluated with
the other one, the episode re-evaluates the plan. An episode that ended without a plan is
scored like an undelivered plan: every constraint fails, as in the official metrics.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import ValidationError, field_validator, model_validator

from agentgym._deprecated import RenamedKeys
from agentgym.errors import ConfigError
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


def _checked_report(report: Mapping[str, Any]) -> Any:
    """The report as the terms read it: a dict holding exactly ``EvaluationReport``'s fields and
    types (verdicts as ``{"passed", "reason"}`` dicts), or an abstention when it is not a
    TravelPlanner report.

    A report as the env writes it is checked in place, without a copy (:func:`_exact`); anything
    else (an ``EvaluationReport``, 0.1's key names, values pydantic coerces) is read by
    ``EvaluationReport`` itself and dumped, so both paths give the terms the same values."""
    if type(report) is dict and _exact(report):
        return report
    from agentgym.envs.travelplanner.evaluation import EvaluationReport

    if not isinstance(report, EvaluationReport):
        try:
            report = EvaluationReport.model_validate(report)
        except ValidationError:
            return _FOREIGN
    return report.model_dump()


_EVALUATORS = ("strict", "official")
_BOOLS = ("delivered", "commonsense_pass", "hard_pass", "final_pass")
_INTS = ("commonsense_passed", "hard_passed", "hard_applicable")
_FLOATS = ("commonsense_micro", "hard_micro")


def _exact(report: dict[str, Any]) -> bool:
    """Whether ``EvaluationReport.model_validate(report)`` would keep every value as it is: each
    field under its own name with exactly its type. Sound, not complete: a False sends the report
    through pydantic, which decides. (``test_rewards_fast_paths`` keeps this beside the model.)"""
    get = report.get
    evaluator = get("evaluator")
    if type(evaluator) is not str or evaluator not in _EVALUATORS:
        return False
    for key in _BOOLS:
        if type(get(key)) is not bool:
            return False
    for key in _INTS:
        if type(get(key)) is not int:
            return False
    for key in _FLOATS:
        if type(get(key)) is not float:
            return False
    error = get("error")
    if error is not None and type(error) is not str:
        return False
    hard = get("hard", _ABSENT)
    return _exact_verdicts(get("commonsense")) and (hard is None or _exact_verdicts(hard))


_ABSENT: Any = object()


def _exact_verdicts(verdicts: Any) -> bool:
    if type(verdicts) is not dict:
        return False
    for name, verdict in verdicts.items():
        if type(name) is not str or type(verdict) is not dict:
            return False
        passed = verdict.get("passed", _ABSENT)
        if (passed is not None and type(passed) is not bool) or type(verdict.get("reason")) is not str:
            return False
    return True


class _ReportTerm(TermSpec):
    guarded = True
    needs = frozenset({"travelplanner"})
    read_report = staticmethod(_checked_report)
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
_FOREIGN = abstain("the report is not a TravelPlanner evaluation report")


@episode_input("plan", "the submitted TravelPlanner plan, as parse_plan reads it", needs="travelplanner")
def read_plan(episode: Any) -> Any:
    """The episode's answer read as a TravelPlanner plan (``ParsedPlan``)."""
    return _plan_of(episode.answer)


def _plan_of(answer: str | None) -> Any:
    listed = _listed(answer)
    return _plan_reader().parse_plan(answer if listed is None else listed)


def _listed(answer: str | None) -> list[Any] | None:
    """The list a bare JSON answer holds, else None. parse_plan then reads the list without
    scanning the text for answer tags and code fences, which a bare JSON plan does not have."""
    text = _bare_json(answer)
    if text is None:
        return None
    decode = _plan_reader().decode
    value = _UNREAD if decode is None else decode(text)
    if value is _UNREAD:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, list) else None


def _bare_json(answer: str | None) -> str | None:
    """``answer`` when it may be a bare JSON list that parse_plan reads (not too long), else None."""
    if answer is None or not answer.lstrip().startswith("[") or len(answer) > _plan_reader().max_text:
        return None
    return answer


class _Reader(NamedTuple):
    parse_plan: Callable[[Any], Any]
    max_text: int
    decode: Callable[[str], Any] | None
    """A plan's JSON as json reads it, when it is as plain as the official plans (a list of
    objects of strings, numbers, booleans or null); ``_UNREAD`` for any other text."""
    days: Callable[[str], Any] | None
    """A plan's JSON as day records when every object has only the official keys (values of
    their types); ``_UNREAD`` for any other text. A key the object lacks reads as ``_ABSENT``."""
    empty: Callable[[Any], bool] | None
    """Whether a day record was decoded from ``{}``."""


@cache
def _plan_reader() -> _Reader:
    """What reads plans, made on first use (the rewards package imports no env).

    msgspec decodes (three to five times json's speed) and refuses every text outside the types
    above; the types bound the nesting, so no recursion limit is involved. Where it refuses, json
    reads the text, so both give the same values (``test_rewards_fast_paths``)."""
    from agentgym.envs.travelplanner.plan import MAX_PLAN_TEXT, parse_plan

    try:
        import msgspec
        import msgspec.structs
    except ImportError:  # pragma: no cover - msgspec is a dependency; json alone gives the same values
        return _Reader(parse_plan, MAX_PLAN_TEXT, None, None, None)

    class Day(msgspec.Struct, forbid_unknown_fields=True):
        days: int = None  # type: ignore[assignment]  # an absent key; JSON's null is refused
        current_city: str = _ABSENT
        transportation: str = _ABSENT
        breakfast: str = _ABSENT
        attraction: str = _ABSENT
        lunch: str = _ABSENT
        dinner: str = _ABSENT
        accommodation: str = _ABSENT

    def reader(decoder: Any) -> Callable[[str], Any]:
        def decode(text: str) -> Any:
            try:
                return decoder.decode(text)
            except msgspec.MsgspecError:
                return _UNREAD

        return decode

    return _Reader(parse_plan, MAX_PLAN_TEXT,
                   reader(msgspec.json.Decoder(list[dict[str, str | int | float | bool | None]])),
                   reader(msgspec.json.Decoder(list[Day])),
                   lambda day: all(map(operator.is_, msgspec.structs.astuple(day), _ABSENT_DAY)))


_UNREAD: Any = object()


class _Absent(str):
    """The value of a day key the JSON object does not have: blank, and told apart from "" by identity."""


_ABSENT = _Absent()
_ABSENT_DAY = (None, *(_ABSENT,) * 7)


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
    text = _bare_json(answer)
    records = _UNREAD if text is None or _plan_reader().days is None else _plan_reader().days(text)
    if records is not _UNREAD:
        # A list of objects with only the official keys: parse_plan delivers it as it is.
        return 0.0 if _day_records_error(records, days) else 1.0
    listed = _listed(answer)
    if listed is not None and len(listed) != 2:
        # parse_plan delivers such a list's entries as they are (only a 2-item list can be its
        # [query, days] form), so they are checked without making a ParsedPlan.
        return 0.0 if _day_list_error(listed, days) else 1.0
    return 0.0 if plan_schema_error(_plan_reader().parse_plan(answer if listed is None else listed), days) else 1.0


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
    """``_day_list_error`` of the objects ``records`` were decoded from (True: an error)."""
    n, empty = len(records), _plan_reader().empty
    while n and empty(records[n - 1]):  # trailing {} padding
        n -= 1
    if not n or (days is not None and n != days):
        return True
    for i in range(n):
        day = records[i]
        # An absent key reads as the blank _ABSENT: a day without a key fails as one with a blank value.
        if type(day.days) is not int or day.days != i + 1 or not (
                day.current_city.strip() and day.transportation.strip() and day.breakfast.strip()
                and day.attraction.strip() and day.lunch.strip() and day.dinner.strip()
                and day.accommodation.strip()):
            return True
    return False


def _days_of(task: Any) -> int | None:
    if task is None:
        return None
    days = task.get("days") if isinstance(task, Mapping) else getattr(task, "days", None)
    return days if isinstance(days, int) else None


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
    return abstain(f"{name} does not apply to this query")


def _applies(name: str, task: Any) -> bool:
    field = _LOCAL_FIELD.get(name)
    if field is None or task is None:
        return True
    local = getattr(task, "local_constraint", None)
    return local is None or getattr(local, field, None) is not None
