"""agentgym: Gymnasium text environments, structured step info and reward shapers for agentic RL.

    import agentgym, gymnasium
    env = gymnasium.make("TravelPlanner-v0")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("CitySearch[Texas]")
"""

from agentgym._version import __version__
from agentgym.core import (
    ActionError,
    ErrorCode,
    StepInfo,
    TextEnv,
    TextSpace,
    Tool,
    ToolBox,
    ToolCall,
    ToolResult,
)
from agentgym.registration import ENV_IDS, register_envs
from agentgym.errors import (
    ActionTypeError,
    AgentGymError,
    ConfigError,
    DataError,
    DependencyNotInstalled,
    ResetNeeded,
)

register_envs()

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
