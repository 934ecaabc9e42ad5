"""The text-env core: base env, spaces, step records, tools and action parsing."""

from agentgym.core.env import TextEnv
from agentgym.core.parsing import Answer, Call, GiveUp, parse_action
from agentgym.core.spaces import TextSpace
from agentgym.core.tools import Param, Tool, ToolBox
from agentgym.core.types import ActionError, ErrorCode, StepInfo, ToolCall, ToolResult

__all__ = [
    "TextEnv", "TextSpace", "StepInfo", "ToolCall", "ToolResult", "ActionError", "ErrorCode",
    "Tool", "Param", "ToolBox", "parse_action", "Call", "Answer", "GiveUp",
]
