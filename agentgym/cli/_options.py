"""Option helpers shared by the commands."""

from __future__ import annotations

import typer

from agentgym._console import labeled, plain_console

__all__ = ["deprecated_flag"]


def deprecated_flag(old: str, new: str, old_value: str | None, new_value: str | None, default: str) -> str:
    """The value of option ``new`` when its deprecated alias ``old`` may have been given instead.

    Passing ``old`` prints a one-line note on stderr; passing both flags with different values is
    a usage error (typer's BadParameter, exit code 2)."""
    if old_value is None:
        return default if new_value is None else new_value
    if new_value is not None and new_value != old_value:
        raise typer.BadParameter(f"{old} is the deprecated name of {new}; give only one", param_hint=new)
    note = f"{old} is now {new}; {old} goes in the next release"
    plain_console(stderr=True).print(labeled("deprecated", "yellow", note))
    return old_value
