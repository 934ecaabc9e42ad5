"""The command line's Rich console: plain text in, plain text out.

Rich markup is off, so a message or a table cell prints exactly as written: ``agentgym-rl[plot]``,
``CitySearch[Texas]`` or ``[min, max]`` keep their square brackets. Colour comes from styles.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

__all__ = ["plain_console", "labeled"]


def plain_console(*, stderr: bool = False) -> Console:
    return Console(markup=False, highlight=False, stderr=stderr)


def labeled(label: str, style: str, message: str) -> Text:
    """``label: message`` with only the label styled, e.g. ``labeled("error", "red", str(exc))``."""
    return Text.assemble((label, style), ": ", message)
