"""A scripted TravelPlanner agent that replays a query's reference plan through the tools.

It needs no model: it looks up what the reference plan uses (each visited city's
attractions, restaurants and accommodations, each leg's flights or driving distance), notes
the results, and submits the plan. Demos and tests use it to play full episodes.
"""

from __future__ import annotations

from agentgym.envs.travelplanner.oracle import plan_actions
from agentgym.envs.travelplanner.queries import TravelQuery

__all__ = ["reference_plan_actions"]


def reference_plan_actions(query: TravelQuery, action_format: str = "react", *, tools: bool = True) -> list[str]:
    """The actions that gather the reference plan's information and submit it.

    With ``tools=False`` (sole-planning mode) only the submission is returned.
    """
    if not query.annotated_plan:
        raise ValueError(f"query {query.id!r} has no reference plan to replay")
    return plan_actions(query, query.annotated_plan[: query.days], action_format, tools=tools)
