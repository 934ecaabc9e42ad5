"""``agentgym travelplanner ...``: commands for TravelPlanner worlds."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from agentgym._deprecated import alias

alias("agentgym travelplanner solve", "--queries", "--tasks")

travelplanner_app = typer.Typer(no_args_is_help=True, help="TravelPlanner worlds and tasks.")


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

    def progress(line: str) -> None:  # on stderr, so stdout keeps the one result line
        typer.echo(f"{time.perf_counter() - start:6.1f} s  {line}", err=True)

    generate_world(out, seed=seed, scale=scale, progress=progress)
    typer.echo(f"wrote a {scale} world (seed {seed}) to {out} in {time.perf_counter() - start:.1f} s")


@travelplanner_app.command("generate")
def generate_command(
    out: Path = typer.Option(..., "--out", "-o", help="The task file to write (jsonl, Hugging Face field format)."),
    world: str = typer.Option("default", "--database", "-d", "--world", "-w", help="A world folder holding "
                              "database/, or 'default' for the embedded synthetic world (--world is an alias)."),
    n: int = typer.Option(90, "--n", "-n", help="How many tasks, spread evenly over the 9 (level, days) groups."),
    seed: int = typer.Option(0, help="Random seed; the same world, seed and options give the same tasks."),
    slack_min: float = typer.Option(0.1, help="Budget = cheapest plan x (1 + slack), slack uniform in [min, max], "
                                    "rounded up to $100."),
    slack_max: float = typer.Option(0.4, help="See --slack-min."),
    hard_transport_share: float = typer.Option(1.0, help="Share of hard tasks with a transportation rule."),
) -> None:
    """Generate feasible tasks, each with its solver-built gold plan (annotated_plan)."""
    import json

    from agentgym.envs.travelplanner.generator import GeneratorConfig, generate_tasks
    from agentgym.envs.travelplanner.synthetic import default_world_path
    from agentgym.envs.travelplanner.world import World
    from agentgym.errors import AgentGymError

    start = time.perf_counter()
    try:
        opened = World.open(default_world_path() if world == "default" else world)
        config = GeneratorConfig(budget_slack_min=slack_min, budget_slack_max=slack_max,
                                 hard_transport_share=hard_transport_share)
        rows = generate_tasks(opened, n, seed=seed, config=config)
    except AgentGymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    elapsed = time.perf_counter() - start
    rate = len(rows) / max(elapsed, 1e-9)
    typer.echo(f"wrote {len(rows)} tasks to {out} in {elapsed:.1f} s ({rate:.1f} tasks/s)")


@travelplanner_app.command("solve")
def solve_command(
    tasks: str = typer.Option(None, "--tasks", "-t", help="Task file (.jsonl/.json/.csv/.parquet) or a split "
                              "name of the world (train, validation, test). Required."),
    queries: str = typer.Option(None, "--queries", "-q", hidden=True, help="Deprecated name of --tasks."),
    database: Path = typer.Option(None, "--database", "-d", "--world", "-w", help="World folder holding database/ "
                                  "(default: found next to the task file, else $AGENTGYM_TRAVELPLANNER_DB, else the "
                                  "embedded world; --world is an alias)."),
    out: Path = typer.Option(Path("submission.jsonl"), "--out", "-o", help="Submission file to write "
                             '(official format: {"idx", "query", "plan"} per line, plan null when unsolved).'),
    must_pass: str = typer.Option(None, "--must-pass", show_default=False, help="The evaluators every plan "
                                  "must pass: both (strict and official; the default) or strict."),
    mode: str = typer.Option(None, "--mode", "-m", hidden=True, help="Deprecated name of --must-pass."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="Seconds per task before giving up."),
) -> None:
    """Solve every task exactly: write a submission and count solved, infeasible and timed-out tasks."""
    import json

    from agentgym.envs.travelplanner.tasks import load_tasks
    from agentgym.cli._options import deprecated_flag
    from agentgym.envs.travelplanner.solver import solve
    from agentgym.envs.travelplanner.synthetic import open_world
    from agentgym.errors import AgentGymError

    must_pass = deprecated_flag("--mode", "--must-pass", mode, must_pass, "both")
    tasks = deprecated_flag("--queries", "--tasks", queries, tasks, None)
    if tasks is None:
        raise typer.BadParameter("a task file or split name is required", param_hint="--tasks")
    start = time.perf_counter()
    try:
        world = open_world(database or _world_near(tasks))
        rows = load_tasks(tasks, world_root=world.root)
        results = [solve(t, world, must_pass=must_pass, time_limit=time_limit) for t in rows]
    except AgentGymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps({"idx": i + 1, "query": t.text, "plan": r.plan}, ensure_ascii=False) + "\n"
                           for i, (t, r) in enumerate(zip(rows, results))), encoding="utf-8")
    count = {s: sum(r.status == s for r in results) for s in ("solved", "infeasible", "timeout")}
    optimal = sum(r.optimal for r in results)
    typer.echo(f"{len(results)} tasks in {time.perf_counter() - start:.1f} s: {count['solved']} solved "
               f"({optimal} proven cheapest), {count['infeasible']} proved infeasible, {count['timeout']} timed out")
    typer.echo(f"wrote {out}")


def _world_near(tasks: str) -> Path | None:
    """The world folder holding the task file (its folder or the one above), if any."""
    path = Path(tasks)
    if path.is_file():
        for folder in list(path.resolve().parents)[:2]:
            if (folder / "database").is_dir():
                return folder
    return None
