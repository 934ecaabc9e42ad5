"""agentgym: Gymnasium text environments, structured step info and reward shapers for agentic RL.

    import agentgym, gymnasium
    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("CitySearch[Texas]")

Everything a user needs is importable from here: the core types, the reward shaping front
(``ShapeReward``, ``build_shaper``, ``Episode``), the env-server client (``RemoteEnv``,
``AsyncRemoteEnv``), the contract check ``check_text_env``, every exception class, and
``AgentGymDeprecationWarning``: what a renamed name's old spelling warns with, for one release
(docs/glossary.md). Names outside ``agentgym.errors`` load on first use, so ``import agentgym`` (and ``agentgym --help``)
stays light.
"""

from agentgym._lazy import lazy_names as _lazy_names
from agentgym._version import __version__
from agentgym import errors as _errors
from agentgym.errors import *  # noqa: F403  (every exception class: errors.__all__, built from the classes)
from agentgym.registration import ENV_IDS, register_envs

register_envs()

_LAZY = {
    **dict.fromkeys(("ActionError", "ErrorCode", "Failure", "FailureReason", "StepInfo", "TextEnv", "TextSpace", "Tool", "ToolBox", "ToolCall",
                     "ToolResult"), "agentgym.core"),
    **dict.fromkeys(("ShapeReward", "build_shaper", "Episode"), "agentgym.rewards"),
    **dict.fromkeys(("RemoteEnv", "AsyncRemoteEnv"), "agentgym.remote"),
    "check_text_env": "agentgym.testing",
    "AgentGymDeprecationWarning": "agentgym._deprecated",
}


__all__ = [
    "__version__",
    "ENV_IDS",
    "register_envs",
    # core
    "TextEnv",
    "TextSpace",
    "StepInfo",
    "ToolCall",
    "ToolResult",
    "ActionError",
    "ErrorCode",
    "Failure",
    "FailureReason",
    "Tool",
    "ToolBox",
    # rewards, remote envs, testing
    "ShapeReward",
    "build_shaper",
    "Episode",
    "RemoteEnv",
    "AsyncRemoteEnv",
    "check_text_env",
    # errors
    *_errors.__all__,
    # warnings
    "AgentGymDeprecationWarning",
]

__getattr__, __dir__ = _lazy_names(__name__, _LAZY, __all__)
