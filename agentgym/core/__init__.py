"""The text-env core: base env, spaces, step records, turn cuts, tools and action parsing.

The names below load on first use, so importing a light submodule does not build every pydantic model.
"""

from agentgym._lazy import lazy_names as _lazy_names

_WHERE = {
    "TextEnv": "env", "TextSpace": "spaces", "StepInfo": "types", "ToolCall": "types", "ToolResult": "types",
    "ActionError": "types", "ErrorCode": "types",
    "Failure": "types", "FailureReason": "types", "Tool": "tools", "Param": "tools", "ToolBox": "tools",
    "parse_action": "parsing", "Call": "parsing", "Answer": "parsing", "GiveUp": "parsing",
    "TurnCut": "turn_cut", "StepResult": "env",
}

__all__ = [
    "TextEnv", "TextSpace", "StepInfo", "ToolCall", "ToolResult", "ActionError", "ErrorCode",
    "Failure", "FailureReason", "Tool", "Param", "ToolBox", "parse_action", "Call", "Answer", "GiveUp",
    "TurnCut", "StepResult", "RenamedKeys",
]


_MODULES = {name: f"agentgym.core.{module}" for name, module in _WHERE.items()}
_MODULES["RenamedKeys"] = "agentgym._deprecated"  # with every other alias; env authors reach it here

__getattr__, __dir__ = _lazy_names(__name__, _MODULES, __all__)
