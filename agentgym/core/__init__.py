"""The text-env core: base env, spaces, step records, tools and action parsing.

The names below load on first use, so importing a light submodule does not build every pydantic model.
"""

from agentgym._lazy import lazy_names as _lazy_names

_WHERE = {
    "TextEnv": "env", "TextSpace": "spaces", "StepInfo": "types", "ToolCall": "types", "ToolResult": "types",
    "ActionError": "types", "ErrorCode": "types",
    "Failure": "types", "FailureReason": "types", "Tool": "tools", "Param": "tools", "ToolBox": "tools",
    "parse_action": "parsing", "Call": "parsing", "Answer": "parsing", "GiveUp": "parsing",
    "TurnCut": "turn_cut",
}

__all__ = [
    "TextEnv", "TextSpace", "StepInfo", "ToolCall", "ToolResult", "ActionError", "ErrorCode",
    "Failure", "FailureReason", "Tool", "Param", "ToolBox", "parse_action", "Call", "Answer", "GiveUp",
    "TurnCut",
]


__getattr__, __dir__ = _lazy_names(__name__, {name: f"agentgym.core.{module}" for name, module in _WHERE.items()},
                                  __all__)
