"""agentgym: Gymnasium text environments, structured step info and reward shapers for agentic RL.

    import agentgym, gymnasium
    env = gymnasium.make("TravelPlanner-v0")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("CitySearch[Texas]")
"""

from agentgym._version import __version__
from agentgym.core.registration import ENV_IDS, register_envs
from agentgym.errors import (
    ActionTypeError,
    AgentGymError,
    ConfigError,
    DataError,
    DependencyNotInstalled,
    ResetNeeded,
)

register_envs()

# The core classes load on first use, so `agentgym --help` does not pay for pydantic models.
_CORE = ("ActionError", "ErrorCode", "StepInfo", "TextEnv", "TextSpace", "Tool", "ToolBox", "ToolCall", "ToolResult")


def __getattr__(name: str):
    if name in _CORE:
        import agentgym.core

        value = getattr(agentgym.core, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'agentgym' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_CORE))


__all__ = [
    "__version__",
    "ENV_IDS",
    "register_envs",
    "TextEnv",
    "TextSpace",
    "StepInfo",
    "ToolCall",
    "ToolResult",
    "ActionError",
    "ErrorCode",
    "Tool",
    "ToolBox",
    "AgentGymError",
    "ConfigError",
    "DataError",
    "ActionTypeError",
    "ResetNeeded",
    "DependencyNotInstalled",
]
