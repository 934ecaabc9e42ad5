"""The ``agentgym`` command line."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, help="agentgym: text environments and rewards for agentic RL.")
eval_app = typer.Typer(no_args_is_help=True, help="Score submissions with an env's official evaluator.")
app.add_typer(eval_app, name="eval")


def main() -> None:
    app()
