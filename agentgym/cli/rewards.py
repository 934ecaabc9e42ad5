"""``agentgym rewards compare|probe``: the reward lab on the command line (``agentgym.rewards.lab``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agentgym._plotting import PLOT_HINT
from agentgym.cli._console import labeled, plain_console
from agentgym.cli._options import parse_env_kwargs

__all__ = ["rewards_app", "compare", "probe"]

rewards_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                          help="Measure reward specs before training: compare their signal over groups of "
                               "rollouts, probe them for hacks.")

_SPEC_HELP = ("A reward spec: a preset name, a .yaml/.json file, or YAML/JSON text (e.g. "
              "'{\"preset\": \"prs/long\", \"terms\": {\"llm_judge\": {\"base_url\": \"http://judge:8000/v1\"}}}'); "
              "repeat to compare several.")
_KWARG_HELP = "Env constructor kwarg KEY=VALUE (VALUE read as JSON when it parses), repeatable."


@rewards_app.command("compare")
def compare(
    rollouts: Annotated[list[Path], typer.Argument(help="agentgym run folders (--samples-per-task), verl rollout "
                                                        "dumps (trainer.rollout_data_dir) or TRL rollout logs "
                                                        "(rollout_func(..., log_dir=)).")],
    spec: Annotated[list[str], typer.Option("--spec", "-s", help=_SPEC_HELP)],
    steps: Annotated[str | None, typer.Option(help="Training steps to shape at, e.g. 0,100,400 (default: 0).")] = None,
    sweep: Annotated[str | None, typer.Option(help="START:STOP:COUNT training steps evenly spaced, instead of "
                                                   "--steps, e.g. 0:500:6.")] = None,
    total_steps: Annotated[int | None, typer.Option(help="The run's length, for schedules in fractions of it.")]
    = None,
    env: Annotated[str | None, typer.Option(help="The env of rollouts that name none.")] = None,
    env_kwarg: Annotated[list[str] | None, typer.Option("--env-kwarg", "-k", help=_KWARG_HELP + " Replaces the "
                                                        "recorded kwargs, e.g. where the data lives here.")] = None,
    json_out: Annotated[str | None, typer.Option("--json", help="Write every metric and the verdict as JSON to "
                                                               "this file ('-': stdout, instead of the tables).")]
    = None,
    fail_if: Annotated[list[str] | None, typer.Option(help="Exit 1 when a spec @ step satisfies METRIC OP NUMBER, "
                                                           "e.g. 'zero_var>0.5' (repeatable; metrics as in the JSON).")]
    = None,
    figures: Annotated[Path | None, typer.Option(help="Draw the figures into this folder (compare.png).")] = None,
    worst: Annotated[int, typer.Option(help="Worst inversions kept per spec @ step.")] = 5,
    allow_failures: Annotated[bool, typer.Option(help="Exit 0 even when something outside the model failed "
                                                      "while shaping (a dead judge).")] = False,
) -> None:
    """Shape the same rollouts under several specs and schedule steps: the signal each gives GRPO."""
    from agentgym.rewards.lab import Rollouts, compare as compare_specs
    from agentgym.rewards.lab.comparison import Threshold, parse_steps, parse_sweep

    if steps is not None and sweep is not None:
        raise typer.BadParameter("give --steps or --sweep, not both", param_hint="--sweep")
    chosen = parse_sweep(sweep) if sweep is not None else parse_steps(steps) if steps is not None else None
    thresholds = [Threshold.parse(t) for t in fail_if or ()]
    comparison = compare_specs(Rollouts.load(*rollouts), list(spec), steps=chosen, total_steps=total_steps,
                               env_id=env, env_kwargs=parse_env_kwargs(env_kwarg), worst=worst)
    console = _console(stderr=json_out == "-")
    if json_out != "-":
        comparison.render(console)
    _write_json(json_out, comparison.to_json(thresholds), console)
    _draw(figures, comparison.plot, "compare.png", console)
    violations = comparison.violations(thresholds)
    for violation in violations:
        console.print(labeled("threshold", "red", violation), soft_wrap=True)
    raise typer.Exit(_verdict(bool(violations), comparison.failed, allow_failures, console))


@rewards_app.command("probe")
def probe(
    env_id: Annotated[str, typer.Argument(help="The env to probe, e.g. TravelPlanner-v0.")],
    spec: Annotated[list[str], typer.Option("--spec", "-s", help=_SPEC_HELP)],
    n_tasks: Annotated[int, typer.Option(help="Tasks to probe: task_index 0 to N-1.")] = 10,
    env_kwarg: Annotated[list[str] | None, typer.Option("--env-kwarg", "-k", help=_KWARG_HELP)] = None,
    probes: Annotated[Path | None, typer.Option(help="A JSONL file of probes of your own "
                                                     "({\"name\", \"actions\": [...]} a line).")] = None,
    probe_function: Annotated[list[str] | None, typer.Option("--probe", help="A probe of your own as "
                                                             "module:function (function(case) -> actions | None); "
                                                             "repeatable.")] = None,
    builtin: Annotated[bool, typer.Option(help="Play the env's built-in probe suite.")] = True,
    step: Annotated[int, typer.Option(help="The training step to shape at (a scheduled spec's clock).")] = 0,
    total_steps: Annotated[int | None, typer.Option(help="The run's length, for schedules in fractions of it.")]
    = None,
    json_out: Annotated[str | None, typer.Option("--json", help="Write the results as JSON to this file "
                                                               "('-': stdout, instead of the tables).")] = None,
    figures: Annotated[Path | None, typer.Option(help="Draw the figure into this folder (probes.png).")] = None,
    allow_failures: Annotated[bool, typer.Option(help="Exit 0 even when something outside the model failed "
                                                      "while shaping (a dead judge).")] = False,
) -> None:
    """Play degenerate answers made from each task's passing one; exit 1 when one earns as much as a pass."""
    from agentgym.rewards.lab import probe as run_probes
    from agentgym.rewards.lab.probes import import_probe

    extra = dict(import_probe(target) for target in probe_function or ())
    report = run_probes(env_id, list(spec), n_tasks=n_tasks, env_kwargs=parse_env_kwargs(env_kwarg), probes=extra,
                        probe_file=probes, builtin=builtin, step=step, total_steps=total_steps)
    console = _console(stderr=json_out == "-")
    if json_out != "-":
        report.render(console)
    for skipped in report.skipped:
        console.print(labeled("skipped", "yellow", skipped), soft_wrap=True)
    _write_json(json_out, report.to_json(), console)
    _draw(figures, report.plot, "probes.png", console)
    raise typer.Exit(_verdict(report.hacked, report.failed, allow_failures, console))


def _console(stderr: bool) -> object:
    console = plain_console(stderr=stderr)
    if not console.is_terminal:  # CI logs and files: the tables keep their term names whole
        console.width = max(console.width, 180)
    return console


def _verdict(violated: bool, failed: bool, allow_failures: bool, console: object) -> int:
    if failed and not allow_failures:
        console.print(labeled("failed", "red", "something outside the model failed while shaping (see FAILED "
                              "above): these figures are not the spec's; fix it, or pass --allow-failures"),
                      soft_wrap=True)
        return 1
    return 1 if violated else 0


def _write_json(target: str | None, text: str, console: object) -> None:
    if target is None:
        return
    if target == "-":
        sys.stdout.write(text + "\n")
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")
    console.print(f"json: {path}", soft_wrap=True)


def _draw(folder: Path | None, plot: object, name: str, console: object) -> None:
    if folder is None:
        return
    drawn = plot(folder / name)
    console.print(f"figure: {drawn}" if drawn is not None else f"no figure: {PLOT_HINT}", soft_wrap=True)
