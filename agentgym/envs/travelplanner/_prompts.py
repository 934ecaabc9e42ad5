"""The text of the first observation: the task, the tools and the plan format."""

from __future__ import annotations

import json
from typing import Any

from agentgym.core.tools import ToolBox
from agentgym.envs.travelplanner.tasks import TravelTask

__all__ = ["first_observation"]

PLAN_FORMAT = """\
The plan is a JSON list with one object per day of the trip, each with the keys
"days" (1, 2, ...), "current_city" ("from A to B" on a travel day, otherwise "A"),
"transportation" ("Flight Number: F0123456, from A to B, Departure Time: hh:mm, Arrival Time: hh:mm",
"Self-driving, from A to B, ..." or "Taxi, from A to B, ..."; "-" when not travelling),
"breakfast", "lunch", "dinner" and "accommodation" ("Name, City", or "-" when not needed) and
"attraction" ("Name, City;" for each attraction, e.g. "Museum A, City;Park B, City;", or "-").
Use only flights, restaurants, attractions and accommodations that the tools returned."""

_TOOL_USE = """\
You are a travel planning agent. Gather the information the trip needs with the tools, then
submit a complete plan. Take one action per turn.{tools}

{submit}

{plan_format}

Query: {query}"""

_SOLE = """\
You are a travel planning agent. Using only the given information, write a complete plan for
the query.

{submit}

{plan_format}

Given information: {reference}

Query: {query}"""


def first_observation(task: TravelTask, tools: ToolBox, fmt: str, reference: list[dict[str, Any]] | None) -> str:
    submit = (
        "Submit the plan with Finish[<plan JSON>] (or <answer><plan JSON></answer>); GiveUp[reason] ends the episode."
        if fmt == "react"
        else "Submit the plan as <answer><plan JSON></answer>; the give_up tool ends the episode."
    )
    if reference is not None:
        return _SOLE.format(submit=submit, plan_format=PLAN_FORMAT, reference=str(reference), query=task.text)
    return _TOOL_USE.format(tools=_tool_text(tools, fmt), submit=submit, plan_format=PLAN_FORMAT, query=task.text)


def _tool_text(tools: ToolBox, fmt: str) -> str:
    if fmt == "react":
        lines = [f"({i}) {t.signature}: {t.description}" for i, t in enumerate(tools, 1)]
        return "\n\nActions:\n" + "\n".join(lines)
    schemas = json.dumps(tools.schemas(), ensure_ascii=False)
    return ('\n\nCall a tool as <tool_call>{"name": ..., "arguments": {...}}</tool_call>. '
            f"Tools:\n<tools>\n{schemas}\n</tools>")
