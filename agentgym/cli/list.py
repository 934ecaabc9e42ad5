"""``agentgym list``: print what this install offers (the data is ``agentgym.cli._catalog.catalog()``)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from agentgym.cli._catalog import catalog

__all__ = ["list_command"]


def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """List the env ids, reward presets and terms, and training recipes."""
    found = catalog()
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    from rich.text import Text

    from agentgym.cli._console import plain_console

    console = plain_console()
    for part, title, how in (("envs", "env ids", "gymnasium.make(ID), agentgym run ID"),
                             ("reward presets", "reward presets", "--reward NAME, reward=NAME"),
                             ("reward terms", "reward terms", "{kind: NAME, weight: W} in a reward spec"),
                             ("recipes", "training recipes", "agentgym train NAME")):
        key = part.replace(" ", "_")
        console.print(Text.assemble((title, "bold"), "  ", (how, "dim")))
        for name in found[key]:
            console.print(f"  {name}")
        if not found[key]:
            console.print(f"  none: {found['notes'].get(key, 'not available')}", style="dim")
