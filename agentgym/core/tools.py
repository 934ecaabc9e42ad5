"""The tool protocol: a named callable with a description and a JSON schema of its arguments.

A tool has two spellings, one per action format: ``action`` for the ReAct syntax
(``FlightSearch[A, B, 2022-03-01]``) and ``name`` for function calling
(``{"name": "search_flights", "arguments": {...}}``). Its parameters are ordered, so the
ReAct positional arguments map onto the same names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.core.types import ToolResult

__all__ = ["Param", "Tool", "ToolBox"]


@dataclass(frozen=True)
class Param:
    name: str
    """Function-calling argument name, e.g. ``origin``."""
    label: str
    """How the ReAct signature shows it, e.g. ``Departure City``."""
    description: str
    enum: tuple[str, ...] | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string", "description": self.description}
        if self.enum:
            out["enum"] = list(self.enum)
        return out


@dataclass(frozen=True)
class Tool:
    name: str
    """Function-calling name, e.g. ``search_flights``."""
    action: str
    """ReAct action name, e.g. ``FlightSearch``."""
    description: str
    params: tuple[Param, ...]
    run: Callable[..., ToolResult] = field(compare=False, repr=False)

    @property
    def signature(self) -> str:
        """The ReAct form, e.g. ``FlightSearch[Departure City, Destination City, Date]``."""
        return f"{self.action}[{', '.join(p.label for p in self.params)}]"

    def schema(self) -> dict[str, Any]:
        """An OpenAI-style function schema, as chat templates and function-calling APIs take it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {p.name: p.schema() for p in self.params},
                    "required": [p.name for p in self.params],
                    "additionalProperties": False,
                },
            },
        }


class ToolBox:
    """Tools looked up by either spelling."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = tuple(tools)
        self._by_name = {t.name: t for t in tools}
        self._by_action = {t.action: t for t in tools}

    def by_name(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    def by_action(self, action: str) -> Tool | None:
        return self._by_action.get(action)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools]

    def __iter__(self):
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)
