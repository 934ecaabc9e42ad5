"""``agentgym travelplanner ...``: commands for TravelPlanner worlds."""

from __future__ import annotations

import time
from pathlib import Path

import typer

travelplanner_app = typer.Typer(no_args_is_help=True, help="TravelPlanner worlds and queries.")


@travelplanner_app.command("world")
def write_world(
    out: Path = typer.Argument(..., help="Folder to write the world into (official layout)."),
    scale: str = typer.Option("default", help="Preset: tiny, default or full (about 4M flights)."),
    seed: int = typer.Option(0, help="Random seed; the same seed and scale give identical files."),
) -> None:
    """Generate a synthetic world in the official TravelPlanner layout."""
    from agentgym.envs.travelplanner.synthetic import SCALE_PRESETS, generate_world
    from agentgym.errors import ConfigError

    if scale not in SCALE_PRESETS:
        raise typer.BadParameter(str(ConfigError("scale", scale, list(SCALE_PRESETS))))
    start = time.perf_counter()
    generate_world(out, seed=seed, scale=scale)
    typer.echo(f"wrote a {scale} world (seed {seed}) to {out} in {time.perf_counter() - start:.1f} s")
