"""How the TravelPlanner terms read the report and the plan fast, with the plain reading's results.

* The report is checked in place when it is as the env writes it (:func:`checked_report`);
  ``EvaluationReport`` reads any other.
* A bare JSON answer is decoded by msgspec, three to five times json's speed, where msgspec's
  types cover the text (:func:`listed`, :func:`day_records`); json reads every other text. The
  types bound the nesting, so no recursion limit is involved.

``tests/rewards/test_rewards_fast_paths.py`` holds each fast path to the plain one.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, NamedTuple

from pydantic import ValidationError

from agentgym.rewards._registry import abstain

__all__ = ["FOREIGN", "checked_report", "plan_of", "listed", "day_records", "is_empty_day", "parse_plan"]

FOREIGN = abstain("the report is not a TravelPlanner evaluation report")

# -- the report --------------------------------------------------------------------------------


def checked_report(report: Mapping[str, Any]) -> Any:
    """The report as the terms read it: a dict holding exactly ``EvaluationReport``'s fields and
    types (verdicts as ``{"passed", "reason"}`` dicts), or ``FOREIGN`` when it is not a
    TravelPlanner report.

    A report as the env writes it is used as it is, without a copy (:func:`_exact`); any other
    (an ``EvaluationReport``, 0.1's key names, values pydantic coerces) is read by
    ``EvaluationReport`` itself and dumped, so both give the terms the same values."""
    if type(report) is dict and _exact(report):
        return report
    from agentgym.envs.travelplanner.evaluation import EvaluationReport

    if not isinstance(report, EvaluationReport):
        try:
            report = EvaluationReport.model_validate(report)
        except ValidationError:
            return FOREIGN
    return report.model_dump()


EVALUATORS = ("strict", "official")
BOOLS = ("delivered", "commonsense_pass", "hard_pass", "final_pass")
INTS = ("commonsense_passed", "hard_passed", "hard_applicable")
FLOATS = ("commonsense_micro", "hard_micro")
_MISSING: Any = object()


def _exact(report: dict[str, Any]) -> bool:
    """Whether ``EvaluationReport.model_validate(report)`` keeps every value as it is: each field
    under its own name with exactly its type. Sound, not complete: where it says no, pydantic
    decides. (A test keeps these field lists equal to the model's.)"""
    get = report.get
    evaluator = get("evaluator")
    if type(evaluator) is not str or evaluator not in EVALUATORS:
        return False
    for key in BOOLS:
        if type(get(key)) is not bool:
            return False
    for key in INTS:
        if type(get(key)) is not int:
            return False
    for key in FLOATS:
        if type(get(key)) is not float:
            return False
    error = get("error")
    if error is not None and type(error) is not str:
        return False
    hard = get("hard", _MISSING)
    return _exact_verdicts(get("commonsense")) and (hard is None or _exact_verdicts(hard))


def _exact_verdicts(verdicts: Any) -> bool:
    if type(verdicts) is not dict:
        return False
    for name, verdict in verdicts.items():
        if type(name) is not str or type(verdict) is not dict:
            return False
        passed = verdict.get("passed", _MISSING)
        if (passed is not None and type(passed) is not bool) or type(verdict.get("reason")) is not str:
            return False
    return True


# -- the plan ----------------------------------------------------------------------------------


def plan_of(answer: str | None) -> Any:
    """``parse_plan`` of the answer, a bare JSON list decoded first."""
    found = listed(answer)
    return parse_plan(answer if found is None else found)


def listed(answer: str | None) -> list[Any] | None:
    """The list a bare JSON answer holds, else None. parse_plan reads such a list without
    scanning the text for answer tags and code fences, which a bare JSON plan does not have."""
    text = _bare_json(answer)
    if text is None:
        return None
    decode = _readers().dicts
    value = _UNREAD if decode is None else decode(text)
    if value is _UNREAD:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, list) else None


def day_records(answer: str | None) -> list[Any] | None:
    """The answer's day objects as records with the official keys as attributes, when it is a
    bare JSON list of objects that have only official keys (``days`` an int, the rest strings);
    else None. A key an object lacks reads as the blank ``ABSENT``."""
    text = _bare_json(answer)
    decode = None if text is None else _readers().days
    found = _UNREAD if decode is None else decode(text)
    return None if found is _UNREAD else found


def is_empty_day(record: Any) -> bool:
    """Whether a record of :func:`day_records` was decoded from ``{}``."""
    return all(map(operator.is_, _readers().fields(record), _EMPTY_DAY))


def parse_plan(value: Any) -> Any:
    return _readers().parse_plan(value)


def _bare_json(answer: str | None) -> str | None:
    """``answer`` when it may be a bare JSON list that parse_plan reads (not too long), else None."""
    if answer is None or not answer.lstrip().startswith("[") or len(answer) > _readers().max_text:
        return None
    return answer


class _Absent(str):
    """The value of a day key that the JSON object lacks: blank, and told apart from "" by identity."""


ABSENT = _Absent()
_EMPTY_DAY = (None, *(ABSENT,) * 7)
_UNREAD: Any = object()


class _Readers(NamedTuple):
    parse_plan: Callable[[Any], Any]
    max_text: int
    dicts: Callable[[str], Any] | None
    """The JSON of a plan as plain as the official ones (a list of objects of strings, numbers,
    booleans or null), as json reads it; ``_UNREAD`` for any other text."""
    days: Callable[[str], Any] | None
    """The JSON of a list of objects with official keys only, as day records; ``_UNREAD`` for any other."""
    fields: Callable[[Any], tuple[Any, ...]]


@cache
def _readers() -> _Readers:
    """Made on first use: the rewards package imports neither the envs nor msgspec."""
    from agentgym.envs.travelplanner.plan import MAX_PLAN_TEXT, parse_plan

    try:
        import msgspec
        import msgspec.structs
    except ImportError:  # pragma: no cover - msgspec is a dependency; json alone gives the same values
        return _Readers(parse_plan, MAX_PLAN_TEXT, None, None, tuple)

    class Day(msgspec.Struct, forbid_unknown_fields=True):
        days: int = None  # type: ignore[assignment]  # None: the key is absent (JSON's null is refused)
        current_city: str = ABSENT
        transportation: str = ABSENT
        breakfast: str = ABSENT
        attraction: str = ABSENT
        lunch: str = ABSENT
        dinner: str = ABSENT
        accommodation: str = ABSENT

    def reader(decoder: Any) -> Callable[[str], Any]:
        def decode(text: str) -> Any:
            try:
                return decoder.decode(text)
            except msgspec.MsgspecError:
                return _UNREAD

        return decode

    return _Readers(parse_plan, MAX_PLAN_TEXT,
                    reader(msgspec.json.Decoder(list[dict[str, str | int | float | bool | None]])),
                    reader(msgspec.json.Decoder(list[Day])), msgspec.structs.astuple)
