"""Every agentgym env id, registered with Gymnasium in one place.

``import agentgym`` calls ``register_envs()``; ``gymnasium.make("agentgym:TravelPlanner-v0")``
imports agentgym first and so works without an explicit import.
"""

from __future__ import annotations

import gymnasium

__all__ = ["ENV_IDS", "register_envs"]

# id -> entry point. Turn limits live in the envs (``max_turns``), not in a TimeLimit wrapper,
# so an episode's truncation is reported in its StepInfo.
_ENTRY_POINTS = {
    "TravelPlanner-v0": "agentgym.envs.travelplanner.env:TravelPlannerEnv",
    "SearchQA-v0": "agentgym.envs.searchqa.env:SearchQAEnv",
    "SearchQA-LongForm-v0": "agentgym.envs.searchqa.env:LongFormSearchQAEnv",
}
ENV_IDS = tuple(_ENTRY_POINTS)


def register_envs() -> None:
    for env_id, entry_point in _ENTRY_POINTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, entry_point=entry_point, disable_env_checker=False)
