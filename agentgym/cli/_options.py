"""Option helpers shared by the commands."""

from __future__ import annotations

import json
from typing import Any

import typer

from agentgym.cli._console import labeled, plain_console

__all__ = ["deprecated_flag", "deprecated_note", "parse_env_kwargs"]


def deprecated_flag(old: str, new: str, old_value: str | None, new_value: str | None, default: str) -> str:
    """The value of option ``new`` when its deprecated alias ``old`` may have been given instead.

    Passing ``old`` prints a one-line note on stderr; passing both flags with different values is
    a usage error (typer's BadParameter, exit code 2)."""
    if old_value is None:
        return default if new_value is None else new_value
    if new_value is not None and new_value != old_value:
        raise typer.BadParameter(f"{old} is the deprecated name of {new}; give only one", param_hint=new)
    deprecated_note(old, new)
    return old_value


def deprecated_note(old: str, new: str) -> None:
    """One line on stderr: ``old`` is now spelt ``new``."""
    plain_console(stderr=True).print(labeled("deprecated", "yellow", f"{old} is now {new}; {old} goes in the "
                                                                      "next release"))


def parse_env_kwargs(pairs: list[str] | None) -> dict[str, Any]:
    """``["max_turns=20", "action_format=json"]`` -> ``{"max_turns": 20, "action_format": "json"}``
    (a value that is not JSON is kept as text)."""
    kwargs: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--env-kwarg")
        try:
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = value
    return kwargs
