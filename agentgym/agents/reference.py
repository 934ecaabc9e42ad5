"""The TravelPlanner reference-plan replay (``envs.travelplanner.oracle.reference_plan_actions``) as an ``Agent``.

    env = gymnasium.make("TravelPlanner-v0", action_format="json")
    log = run_episode(env, travelplanner_reference_agent(env), seed=0)   # final pass on gold plans
"""

from __future__ import annotations

from typing import Any

from agentgym.agents.base import ReplayAgent
from agentgym.errors import ConfigError

__all__ = ["travelplanner_reference_agent"]


def travelplanner_reference_agent(env: Any) -> ReplayAgent:
    """Replays each episode's reference plan: the lookups it needs, then the plan itself.

    ``env`` must be a local TravelPlanner env: the agent reads the episode's query from it, after
    each reset, which is where the runner and ``play_episode`` call ``agent.reset()``.
    """
    from agentgym.envs.travelplanner.env import TravelPlannerEnv
    from agentgym.envs.travelplanner.oracle import reference_plan_actions

    unwrapped = getattr(env, "unwrapped", None)
    if not isinstance(unwrapped, TravelPlannerEnv):
        raise ConfigError("env", type(unwrapped).__name__, "a local TravelPlanner env (the replay reads its query)")

    def script(observation: str, info: dict[str, Any]) -> list[str]:
        return reference_plan_actions(unwrapped.task, unwrapped.action_format, tools=unwrapped.mode == "tool-use")

    return ReplayAgent(script, fallback="GiveUp[the reference plan is exhausted]")
