"""The text-env core: base env, spaces, step records, tools and action parsing.

The names below load on first use, so importing a light submodule does not build every pydantic model.
"""

import importlib

_WHERE = {
    "TextEnv": "env", "TextSpace": "spaces", "StepInfo": "types", "ToolCall": "types", "ToolResult": "types",
    "ActionError": "types", "ErrorCode": "types", "Tool": "tools", "Param": "tools", "ToolBox": "tools",
    "parse_action": "parsing", "Call": "parsing", "Answer": "parsing", "GiveUp": "parsing",
}

__all__ = [
    "TextEnv", "TextSpace", "StepInfo", "ToolCall", "ToolResult", "ActionError", "ErrorCode",
    "Tool", "Param", "ToolBox", "parse_action", "Call", "Answer", "GiveUp",
]


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"agentgym.core.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'agentgym.core' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
