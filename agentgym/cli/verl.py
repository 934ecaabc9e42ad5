"""``agentgym verl ...`` (data preparation, recipes) and ``agentgym train RECIPE [overrides...]``.

Imported by ``agentgym.cli``; verl itself is only imported when a command needs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from agentgym._deprecated import alias
from agentgym.cli._options import deprecated_flag, parse_env_kwargs
from agentgym.errors import AgentGymError, ConfigError, DependencyNotInstalled

__all__ = ["verl_app", "train", "TRAIN_CONTEXT"]

verl_app = typer.Typer(no_args_is_help=True, help="verl 0.9 integration: training data and recipes.")
alias("agentgym verl prepare", "--queries", "--tasks")
TRAIN_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}
"""``agentgym train`` passes every argument it does not know to Hydra as an override."""


@verl_app.command("prepare")
def prepare(
    env_id: str = typer.Argument(..., help="TravelPlanner-v0, SearchQA-v0, SearchQA-LongForm-v0, or your own env "
                                 "as your_module:YourEnv-v0 (the module registers it; verl's workers import it too)."),
    out: Path = typer.Option(..., "--out", "-o", help="Parquet file to write (data.train_files / val_files)."),
    split: str = typer.Option(None, "--split", help="A split of the env's data, e.g. train or validation."),
    tasks: str = typer.Option(None, "--tasks", help="A task file instead of a split."),
    queries: str = typer.Option(None, "--queries", hidden=True, help="Deprecated name of --tasks."),
    env_kwarg: list[str] = typer.Option(None, "--env-kwarg", "-k", help="Env constructor kwarg KEY=VALUE (VALUE "
                                        "read as JSON when it parses), e.g. -k action_format=json. Repeatable."),
    reward: str = typer.Option(None, "--reward", help="Reward preset or spec (JSON/YAML text or file) for the rows."),
    limit: int = typer.Option(None, "--limit", min=1, help="At most this many rows."),
    start: int = typer.Option(0, "--start", min=0, help="Index of the first task."),
    system_prompt: str = typer.Option(None, "--system-prompt", help="A system message put before each task."),
    data_source: str = typer.Option(None, "--data-source", help="Search QA: the dataset name for every row "
                                    "(nq, hotpotqa... for Search-R1's trainer; searchR1_nq... for verl's), over the "
                                    "task file's own data_source field. Without it, rows lacking one take the "
                                    "dataset the file name names, and a file naming none is refused."),
) -> None:
    """Write verl rows (prompt, data_source, reward_model, extra_info, agent_name) for an env's tasks."""
    from agentgym.integrations.verl.prepare import prepare_rows, write_parquet

    tasks = deprecated_flag("--queries", "--tasks", queries, tasks, None)
    if out.suffix.lower() != ".parquet":  # the rows are Parquet whatever the name says
        raise typer.BadParameter(f"{str(out)!r} would hold Parquet rows under another name; name it "
                                 f"{str(out.with_suffix('.parquet'))!r} (verl's data.train_files reads Parquet)",
                                 param_hint="--out")
    try:
        rows = prepare_rows(env_id, split=split, tasks=tasks, env_kwargs=parse_env_kwargs(env_kwarg or []),
                            reward=_spec(reward), limit=limit, start=start, system_prompt=system_prompt,
                            data_source=data_source)
        path = write_parquet(rows, out)
    except DependencyNotInstalled:
        raise  # the console script's one exit code for a missing extra
    except AgentGymError as exc:
        raise typer.BadParameter(str(exc)) from None
    typer.echo(f"wrote {len(rows)} rows for {env_id} to {path}")
    if limit is not None and len(rows) < limit:
        typer.echo(f"note: --limit {limit} asked for more rows than the tasks from --start {start} on; "
                   f"all {len(rows)} were written", err=True)


@verl_app.command("selftest")
def selftest(
    launch: bool = typer.Option(True, "--launch/--no-launch", help="Also run the bundled recipes through verl's "
                                "launcher up to GPU allocation (about two of the five minutes)."),
) -> None:
    """Check the training path on CPU with real verl components and a tiny Qwen2 model (no GPU, no download)."""
    from agentgym.integrations.verl import require_verl

    try:
        require_verl()
        from agentgym.integrations.verl.preflight.selftest import run_selftest

        run_selftest(launch=launch, echo=typer.echo)
    except DependencyNotInstalled:
        raise  # the console script's one exit code for a missing extra
    except AgentGymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except AssertionError as exc:
        typer.echo(f"selftest FAILED: {exc}", err=True)
        raise typer.Exit(1) from None


@verl_app.command("recipes")
def recipes(name: str = typer.Argument(None, help="Print this recipe's YAML.")) -> None:
    """List the bundled verl recipes, or print one (a TRL recipe too, e.g. trl_searchqa)."""
    from agentgym.integrations.trl.train import RECIPES as TRL_RECIPES
    from agentgym.integrations.trl.train import recipe_text as trl_recipe_text
    from agentgym.integrations.verl.train import RECIPES, recipe_text

    if name is None:
        typer.echo("\n".join(RECIPES))  # `agentgym list` shows the TRL recipes beside these
        return
    try:
        typer.echo(trl_recipe_text(name) if name in TRL_RECIPES else recipe_text(name))
    except AgentGymError as exc:
        raise typer.BadParameter(str(exc)) from None


def train(
    ctx: typer.Context,
    recipe: str = typer.Argument(..., help="grpo, planner_r1, prs_vspo (verl) or trl_searchqa, trl_travelplanner, "
                                 "trl_planner_r1 (TRL)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check the resolved config (verl: and a scripted episode "
                                 "per sampled row); no training, no GPU."),
    verbose: bool = typer.Option(False, "--verbose", help="With --dry-run: print the whole resolved config first. "
                                 "TRL runs: also TRL's progress bar and metrics at each step (history.json has "
                                 "them either way)."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the last checkpoint in the output folder "
                                "(TRL: grpo.output_dir; verl resumes by default, trainer.resume_mode=auto)."),
) -> None:
    """Train a bundled recipe: verl (grpo, planner_r1, prs_vspo) or TRL (trl_searchqa, trl_travelplanner,
    trl_planner_r1), plus overrides KEY=VALUE.

    verl recipes take Hydra overrides; TRL recipes take dotted.key=value (read as YAML). A TRL run
    keeps the final model and tokenizer, history.json, recipe.yaml and checkpoint-N folders in
    grpo.output_dir."""
    if recipe.startswith("trl_"):
        raise typer.Exit(_train_trl(recipe, list(ctx.args), dry_run, resume=resume, verbose=verbose))
    from agentgym.integrations.verl import require_verl

    try:
        require_verl()
        overrides = (["trainer.resume_mode=auto"] if resume else []) + list(ctx.args)
        if dry_run:
            raise typer.Exit(_dry_run(recipe, overrides, verbose))
        from agentgym.integrations.verl.train import launch

        launch(recipe, overrides)
    except DependencyNotInstalled:
        raise  # the console script's one exit code for a missing extra
    except AgentGymError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _train_trl(recipe: str, overrides: list[str], dry_run: bool, *, resume: bool, verbose: bool) -> int:
    from agentgym.integrations.trl import require_trl

    try:
        require_trl()
        from agentgym.integrations.trl.train import dry_run as trl_dry_run
        from agentgym.integrations.trl.train import train as trl_train

        if dry_run:
            return trl_dry_run(recipe, overrides, resume=resume, echo=typer.echo)
        trl_train(recipe, overrides, resume=resume, verbose=verbose, echo=typer.echo)
        return 0
    except DependencyNotInstalled:
        raise  # the console script's one exit code for a missing extra
    except AgentGymError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 2


def _dry_run(recipe: str, overrides: list[str], verbose: bool = False) -> int:
    from agentgym.integrations.verl.preflight.checks import check_config
    from agentgym.integrations.verl.train import compose_recipe, resolved_yaml

    try:
        config = compose_recipe(recipe, overrides)
    except ConfigError as exc:
        if exc.field != "override":
            raise
        typer.echo(f"problem: the overrides do not compose: {exc}", err=True)
        return 1
    except AgentGymError:
        raise
    except Exception as exc:  # Hydra: a bad override, a missing config
        typer.echo(f"problem: the overrides do not compose: {exc}", err=True)
        return 1
    problems = check_config(config)
    try:
        text = resolved_yaml(config)  # resolving finds missing mandatory values, printed or not
        if verbose:
            typer.echo(text)
    except Exception as exc:  # e.g. a mandatory value left missing: reported below
        problems.append(f"the config does not resolve: {exc}")
    report = _check_run(config)
    for note in report.notes:
        typer.echo(note, err=True)
    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    problems += report.problems
    for problem in problems:
        typer.echo(f"problem: {problem}", err=True)
    if not verbose:
        typer.echo("(the whole resolved config: add --verbose)", err=True)
    typer.echo(f"{recipe}: {'ready to launch' if not problems else f'{len(problems)} problem(s)'}", err=True)
    return 1 if problems else 0


def _check_run(config: Any) -> Any:
    """Run length, reward stages and a scripted episode per sampled row (``preflight.dryrun.check_run``)."""
    from agentgym.integrations.verl.preflight.dryrun import DryRunReport, check_run

    try:
        return check_run(config)
    except Exception as exc:  # a check that cannot run is itself a finding, not a crash
        return DryRunReport(problems=[f"check_run: {type(exc).__name__}: {exc}"])


def _spec(reward: str | None) -> Any:
    if reward is None:
        return None
    try:
        return json.loads(reward)
    except json.JSONDecodeError:
        return reward  # a preset name, YAML text or a file path: the reward loader reads those
