"""The command line's Rich console: plain text in, plain text out.

Rich markup is off, so a message or a table cell prints exactly as written: ``agentgym[plot]``,
``CitySearch[Texas]`` or ``[min, max]`` keep their square brackets. Colour comes from styles.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

__all__ = ["plain_console", "labeled", "deprecated_flag"]


def plain_console(*, stderr: bool = False) -> Console:
    return Console(markup=False, highlight=False, stderr=stderr)


def labeled(label: str, style: str, message: str) -> Text:
    """``label: message`` with only the label styled, e.g. ``labeled("error", "red", str(exc))``."""
    return Text.assemble((label, style), ": ", message)


def deprecated_flag(old: str, new: str, old_value: str | None, new_value: str | None, default: str) -> str:
    """The value of option ``new`` when its deprecated alias ``old`` may have been given instead.

    Passing ``old`` prints a one-line note on stderr; passing both flags with different values is
    a usage error (typer's BadParameter, exit code 2)."""
    import typer  # only the commands call this; the library stays free of typer

    if old_value is None:
        return default if new_value is None else new_value
    if new_value is not None and new_value != old_value:
        raise typer.BadParameter(f"{old} is the deprecated name of {new}; give only one", param_hint=new)
    note = f"{old} is now {new}; {old} goes in the next release"
    plain_console(stderr=True).print(labeled("deprecated", "yellow", note))
    return old_value
