"""TravelPlanner's reward-lab kit (``TravelPlannerEnv.reward_lab``): a passing episode of the env's
current task, failure edits of its plan, invalid calls, and the probe suite.

The passing plan is the task's gold plan when it passes the env's evaluator, else the exact
solver's (``solve(..., must_pass="both")``). Every edit and probe starts from it, reads it with
the public :func:`~agentgym.envs.travelplanner.plan.parse_plan` and submits the changed plan with
:func:`~agentgym.envs.travelplanner.scripted.plan_actions`, after the passing episode's own lookups.

The probes are degenerate plans that each fail the ``strict`` evaluator:

* ``unknown_transport``: every travel day's transportation is "Teleport from A to B" (the official
  evaluator checks only flight, self-driving and taxi legs: TravelPlanner#51's "Drive");
* ``case_repeat``: a later meal repeats an earlier restaurant in other letter case;
* ``prefix_repeat``: a later meal repeats an earlier restaurant by a prefix of its name (the official
  evaluator compares exact strings for repeats but finds restaurants by substring);
* ``all_dashes``: every field but ``days`` is ``-``;
* ``junk_values``: the right keys, each value a junk string;
* ``task_text``: the task's own text submitted as the plan;
* ``empty_plan``: ``[]``.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentgym.core.parsing import Answer, parse_action
from agentgym.envs.travelplanner.evaluation import evaluate
from agentgym.envs.travelplanner.plan import PLAN_KEYS, parse_plan
from agentgym.envs.travelplanner.scripted import give_up, plan_actions
from agentgym.envs.travelplanner.solver import solve

if TYPE_CHECKING:
    from agentgym.envs.travelplanner.env import TravelPlannerEnv
    from agentgym.rewards.lab.probes import ProbeCase

__all__ = ["passing_actions", "failure_edit", "invalid_action", "PROBES", "EDITS", "submitted_plan"]

_ROUTE = re.compile(r"from (.+?) to (.+)")
_MEALS = ("breakfast", "lunch", "dinner")
Days = list[dict[str, Any]]


def passing_actions(env: TravelPlannerEnv, *, time_limit: float = 30.0) -> list[str] | None:
    """The lookups and the submission of a plan that passes ``env``'s evaluator on its current task, or None."""
    task = env.task
    for plan in _candidates(env, time_limit):
        if evaluate(plan, task, env.world, evaluator=env.evaluator).final_pass:
            return plan_actions(task, plan, env.action_format, tools=env.mode == "tool-use")
    return None


def _candidates(env: TravelPlannerEnv, time_limit: float) -> Any:
    task = env.task
    if task.annotated_plan:
        yield [dict(day) for day in task.annotated_plan[: task.days]]
    result = solve(task, env.world, must_pass="both", time_limit=time_limit)
    if result.solved:
        yield [dict(day) for day in result.plan]


def submitted_plan(env: TravelPlannerEnv, action: str) -> Days | None:
    """The day list an action submits (``Finish[...]`` or ``<answer>...</answer>``), else None."""
    parsed = parse_action(action, env.tools, env.action_format)
    if not isinstance(parsed, Answer):
        return None
    plan = parse_plan(parsed.text)
    return copy.deepcopy(plan.days) if plan.delivered else None


def _resubmit(env: TravelPlannerEnv, actions: list[str], days: Any) -> list[str]:
    """``actions`` with the submission replaced by ``days`` (a day list, or any text)."""
    text = days if isinstance(days, str) else json.dumps(days, ensure_ascii=False)
    submission = f"Finish[{text}]" if env.action_format == "react" else f"<answer>{text}</answer>"
    return actions[:-1] + [submission]


# -- failure edits (the perturbed agent) --------------------------------------------------------
def _repeat_restaurant(days: Days, env: TravelPlannerEnv, rng: random.Random) -> Days | None:
    slots = _meal_slots(days)
    if len(slots) < 2:
        return None
    (d1, m1), (d2, m2) = sorted(rng.sample(slots, 2))
    days[d2][m2] = days[d1][m1]
    return days


def _drop_accommodation(days: Days, env: TravelPlannerEnv, rng: random.Random) -> Days | None:
    if len(days) < 2:
        return None
    days[rng.randrange(len(days) - 1)]["accommodation"] = "-"
    return days


def _skip_meal(days: Days, env: TravelPlannerEnv, rng: random.Random) -> Days | None:
    slots = [(d, m) for d, m in _meal_slots(days) if not _travel_day(days[d])]
    if not slots:
        return None
    d, m = rng.choice(slots)
    days[d][m] = "-"
    return days


def _unknown_restaurant(days: Days, env: TravelPlannerEnv, rng: random.Random) -> Days | None:
    slots = _meal_slots(days)
    if not slots:
        return None
    d, m = rng.choice(slots)
    days[d][m] = "Chez Nowhere, " + days[d][m].rsplit(", ", 1)[-1]
    return days


def _pricier_stay(days: Days, env: TravelPlannerEnv, rng: random.Random) -> Days | None:
    """Every night in the city's dearest listing: over budget more often than not."""
    changed = False
    for day in days:
        stay = str(day.get("accommodation", "-"))
        if ", " not in stay:
            continue
        city = stay.rsplit(", ", 1)[1]
        rows = env.world.accommodations(city.split("(")[0].strip())
        if rows:
            day["accommodation"] = f"{max(rows, key=lambda r: float(r.price)).name}, {city}"
            changed = True
    return days if changed else None


def _transport_conflict(days: Days, env: TravelPlannerEnv, rng: random.Random) -> Days | None:
    legs = [i for i, day in enumerate(days) if _travel_day(day)]
    if len(legs) < 2:
        return None
    i = rng.choice(legs)
    a, b = _ROUTE.match(days[i]["current_city"]).groups()
    mode = "flight" if "self-driving" in str(days[legs[0] if i != legs[0] else legs[-1]]["transportation"]).lower() \
        else "self-driving"
    days[i]["transportation"] = (f"Flight Number: F0000000, from {a} to {b}, Departure Time: 08:00, Arrival Time: 10:00"
                                 if mode == "flight" else f"Self-driving, from {a} to {b}, duration: 5 hours, cost: 50")
    return days


def _drop_day(days: Days, env: TravelPlannerEnv, rng: random.Random) -> Days | None:
    return days[:-1] if len(days) > 1 else None


def _repeat_attraction(days: Days, env: TravelPlannerEnv, rng: random.Random) -> Days | None:
    stays = [i for i, day in enumerate(days) if ";" in str(day.get("attraction", ""))]
    if len(stays) < 2:
        return None
    i, j = sorted(rng.sample(stays, 2))
    days[j]["attraction"] = days[i]["attraction"]
    return days


EDITS: dict[str, Callable[[Days, Any, random.Random], Days | None]] = {
    "repeat_restaurant": _repeat_restaurant, "drop_accommodation": _drop_accommodation, "skip_meal": _skip_meal,
    "unknown_restaurant": _unknown_restaurant, "pricier_stay": _pricier_stay,
    "transport_conflict": _transport_conflict, "drop_day": _drop_day, "repeat_attraction": _repeat_attraction,
}
"""The failure edits of a plan: each breaks one or a few constraints (or the schema, ``drop_day``)."""


def failure_edit(env: TravelPlannerEnv, actions: list[str], rng: random.Random) -> list[str]:
    """``actions`` with one failure edit applied to the submitted plan (a give-up when none applies)."""
    days = submitted_plan(env, actions[-1]) if actions else None
    if days is None:
        return actions
    for name in rng.sample(sorted(EDITS), len(EDITS)):
        edited = EDITS[name](copy.deepcopy(days), env, rng)
        if edited is not None:
            return _resubmit(env, actions, edited)
    return actions[:-1] + [give_up("no edit applies", env.action_format)]


def invalid_action(env: TravelPlannerEnv, rng: random.Random) -> str:
    """An action the env cannot read or carry out: a wrong arity, an unknown tool, or prose."""
    if env.action_format == "react":
        return rng.choice([f"FlightSearch[{env.task.org}]", f"Teleport[{env.task.dest}]",
                           "I should look up the flights next."])
    return rng.choice(['<tool_call>{"name": "teleport", "arguments": {}}</tool_call>',
                       '<tool_call>{"name": "search_flights", "arguments": </tool_call>',
                       "I should look up the flights next."])


# -- probes -------------------------------------------------------------------------------------
def _unknown_transport(case: ProbeCase) -> list[str] | None:
    days = _plan(case)
    legs = [day for day in days if _travel_day(day)]
    if not legs:
        return None
    for day in legs:
        a, b = _ROUTE.match(day["current_city"]).groups()
        day["transportation"] = f"Teleport from {a} to {b}"
    return _resubmit(case.env, case.passing, days)


def _repeat(case: ProbeCase, variant: Callable[[str], str]) -> list[str] | None:
    days = _plan(case)
    slots = _meal_slots(days)
    if len(slots) < 2:
        return None
    (d1, m1), (d2, m2) = slots[0], slots[-1]
    name, city = days[d1][m1].rsplit(", ", 1)
    days[d2][m2] = f"{variant(name)}, {city}"
    return _resubmit(case.env, case.passing, days)


def _case_repeat(case: ProbeCase) -> list[str] | None:
    return _repeat(case, str.swapcase)


def _prefix_repeat(case: ProbeCase) -> list[str] | None:
    return _repeat(case, lambda name: name[: max(1, len(name) - 1)])


def _all_dashes(case: ProbeCase) -> list[str] | None:
    days = [{key: (day.get("days", i + 1) if key == "days" else "-") for key in PLAN_KEYS}
            for i, day in enumerate(_plan(case))]
    return _resubmit(case.env, case.passing, days)


def _junk_values(case: ProbeCase) -> list[str] | None:
    days = [{key: (day.get("days", i + 1) if key == "days" else "see notes") for key in PLAN_KEYS}
            for i, day in enumerate(_plan(case))]
    return _resubmit(case.env, case.passing, days)


def _task_text(case: ProbeCase) -> list[str] | None:
    return _resubmit(case.env, case.passing, case.task_text) if case.task_text else None


def _empty_plan(case: ProbeCase) -> list[str] | None:
    return _resubmit(case.env, case.passing, [])


PROBES: dict[str, Callable[[Any], list[str] | None]] = {
    "unknown_transport": _unknown_transport, "case_repeat": _case_repeat, "prefix_repeat": _prefix_repeat,
    "all_dashes": _all_dashes, "junk_values": _junk_values, "task_text": _task_text, "empty_plan": _empty_plan,
}
"""The built-in probes: ``case -> actions`` (None when the task has nothing to probe)."""


# -- helpers -------------------------------------------------------------------------------------
def _plan(case: ProbeCase) -> Days:
    days = submitted_plan(case.env, case.passing[-1])
    return days if days is not None else []


def _travel_day(day: dict[str, Any]) -> bool:
    return _ROUTE.match(str(day.get("current_city", ""))) is not None


def _meal_slots(days: Days) -> list[tuple[int, str]]:
    return [(i, meal) for i, day in enumerate(days) for meal in _MEALS
            if ", " in str(day.get(meal, "-"))]
