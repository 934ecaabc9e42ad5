"""The TravelPlanner plan: a list of day dicts, and a parser that never raises.

A plan is what the official evaluator reads: one dict per day with the keys ``days``,
``current_city``, ``transportation``, ``breakfast``, ``attraction``, ``lunch``, ``dinner`` and
``accommodation`` (``'-'`` means "none"). :func:`parse_plan` accepts the shapes a plan arrives in
and turns every other shape into a "not delivered" result with a reason:

* a Python list of day dicts (``{}`` padding allowed), or the HF ``annotated_plan`` form
  ``[query_meta, [day, ...]]``;
* a JSON string holding such a list, optionally fenced (```` ```json ````) or wrapped in
  ``<answer>...</answer>`` (the last complete answer counts); a Python-literal list
  (single quotes, as the official gold plans are written) is read with ``ast.literal_eval``;
* an official submission line ``{"idx": i, "query": text, "plan": [...] | null}``, as a dict or
  as its JSON text;
* a :class:`Plan` model or an already parsed :class:`ParsedPlan`.

A list counts as delivered when it holds at least one day object; entries that are not
objects are kept, so the evaluator can fail the constraints that read them.

Plan text is model text: tags and fences are found in linear time, and a Python literal is read
only within size limits (``agentgym.envs.travelplanner._literal``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentgym.core.tags import has_tag, last_block
from agentgym.envs.travelplanner._literal import LiteralError, literal_eval

__all__ = ["PlanDay", "Plan", "ParsedPlan", "parse_plan", "PLAN_KEYS", "MAX_PLAN_TEXT"]

PLAN_KEYS = ("days", "current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")
MAX_PLAN_TEXT = 2_000_000
"""Plan texts longer than this many characters are not read (not delivered)."""
# ast.literal_eval costs hundreds of bytes per token; a gold plan written as a literal is about
# 4 kB with 250 separators, so these caps leave room and keep a degenerate literal cheap.
_LITERAL_LIMIT = 100_000
_LITERAL_ITEMS = 5_000
# What follows a fence's opening backticks: the language tag and whitespace (a match, never backtracking).
_FENCE_HEAD = re.compile(r"[a-zA-Z]*\s*")


class PlanDay(BaseModel):
    """One day of a plan, with the official keys; ``'-'`` means "none"."""

    model_config = ConfigDict(extra="allow", frozen=True)

    days: int = Field(ge=1)
    current_city: str
    transportation: str = "-"
    breakfast: str = "-"
    attraction: str = "-"
    lunch: str = "-"
    dinner: str = "-"
    accommodation: str = "-"

    def to_official(self) -> dict[str, Any]:
        """The day as the official evaluator reads it (extra keys kept)."""
        return self.model_dump()


class Plan(BaseModel):
    """A whole plan: the day list of the official submission format."""

    model_config = ConfigDict(frozen=True)

    days: tuple[PlanDay, ...]

    def to_official(self) -> list[dict[str, Any]]:
        return [d.to_official() for d in self.days]


class ParsedPlan(BaseModel):
    """The outcome of :func:`parse_plan`: the day list, or why there is none."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    days: list[Any] | None = None
    """The day entries as given (normally dicts); None when the plan was not delivered."""
    delivered: bool = False
    reason: str | None = None
    """Why the plan was not delivered (None when it was)."""


def parse_plan(source: Any) -> ParsedPlan:
    """Read a plan from any of the accepted shapes; never raises."""
    try:
        return _parse(source, depth=0)
    except Exception as exc:  # noqa: BLE001 - a plan is model output: no shape may raise
        return _missing(f"the plan could not be read ({type(exc).__name__})")


def _parse(source: Any, depth: int) -> ParsedPlan:
    if depth > 3:
        return _missing("the plan is nested too deeply")
    if source is None:
        return _missing("no plan was given (null)")
    if isinstance(source, ParsedPlan):
        return source
    if isinstance(source, Plan):
        return _from_list(source.to_official())
    if isinstance(source, (list, tuple)):
        return _from_list(source)
    if isinstance(source, Mapping):
        return _from_mapping(source, depth)
    if isinstance(source, (bytes, bytearray)):
        try:
            source = bytes(source).decode("utf-8")
        except UnicodeDecodeError:
            return _missing("the plan bytes are not UTF-8 text")
    if isinstance(source, str):
        return _from_text(source, depth)
    return _missing(f"a {type(source).__name__} is not a plan; expected a list of day objects")


def _from_mapping(source: Mapping[Any, Any], depth: int) -> ParsedPlan:
    if "plan" in source:  # an official submission line {"idx", "query", "plan"}
        return _parse(source["plan"], depth + 1)
    return _missing("a JSON object is not a plan; expected a list of day objects "
                    "or a submission line with a 'plan' key")


def _from_list(items: Any) -> ParsedPlan:
    days = list(items)
    if len(days) == 2 and isinstance(days[0], Mapping) and "org" in days[0] and isinstance(days[1], (list, tuple)):
        days = list(days[1])  # the HF annotated_plan form [query_meta, [day, ...]]
    if not days:
        return _missing("the plan is an empty list")
    if not any(isinstance(d, dict) for d in days):
        kinds = sorted({type(d).__name__ for d in days})
        return _missing(f"the plan list holds no day objects (only {', '.join(kinds)})")
    return ParsedPlan(days=days, delivered=True)


def _from_text(text: str, depth: int) -> ParsedPlan:
    if len(text) > MAX_PLAN_TEXT:
        return _missing(f"the plan text is longer than {MAX_PLAN_TEXT} characters")
    body = text.strip()
    if has_tag(body, "answer"):
        found = last_block(body, "answer")
        if found is None:
            return _missing("the <answer> tag is not closed")
        body = found.strip()
    fenced = _fenced(body)
    if fenced is not None:
        body = fenced.strip()
    if not body:
        return _missing("the plan text is empty")
    value, ok = _load(body)
    if not ok:
        start, end = body.find("["), body.rfind("]")
        if 0 <= start < end:
            value, ok = _load(body[start:end + 1])
    if not ok:
        return _missing("the plan text is not a JSON (or Python-literal) list of day objects")
    if isinstance(value, str):
        return _missing("the plan text holds a string, not a list of day objects")
    return _parse(value, depth + 1)


def _fenced(text: str) -> str | None:
    """What ``re.search(r"```[a-zA-Z]*\\s*\\n?(.*?)```", text, re.DOTALL).group(1)`` gives, in linear time:
    the first fence that has a closing one after its language tag and whitespace."""
    start = text.find("```")
    if start < 0:
        return None
    head = _FENCE_HEAD.match(text, start + 3)
    end = text.find("```", head.end())
    return None if end < 0 else text[head.end():end]


def _load(text: str) -> tuple[Any, bool]:
    try:
        return json.loads(text), True  # linear in C; big ints raise ValueError, deep nesting RecursionError
    except (ValueError, RecursionError):
        pass
    try:
        return literal_eval(text, max_chars=_LITERAL_LIMIT, max_items=_LITERAL_ITEMS), True
    except LiteralError:
        return None, False


def _missing(reason: str) -> ParsedPlan:
    return ParsedPlan(days=None, delivered=False, reason=reason)
