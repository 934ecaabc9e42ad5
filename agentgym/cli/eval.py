"""``agentgym eval ENV``: score submissions with an env's official evaluator.

``agentgym eval travelplanner`` reads the submission through ``agentgym.envs.travelplanner.evaluation.submissions``,
which holds the scoring (``run``) and the output (``print_metrics``, ``to_json``) and needs no typer.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agentgym._deprecated import alias
from agentgym.cli._console import labeled, plain_console
from agentgym.cli._options import deprecated_flag
from agentgym.envs.travelplanner.evaluation import EVALUATORS
from agentgym.envs.travelplanner.evaluation.submissions import print_metrics, run, to_json
from agentgym.envs.travelplanner.synthetic import world_label
from agentgym.envs.travelplanner.tasks import SPLITS
from agentgym.errors import AgentGymError

__all__ = ["eval_app", "travelplanner"]

alias("agentgym eval travelplanner", "--evaluation", "--evaluator")
alias("agentgym eval travelplanner", "--mode", "--evaluator")
alias("agentgym eval travelplanner", "--queries", "--tasks")
alias("agentgym eval travelplanner", "--foreign-queries", "--foreign-tasks")

eval_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                       help="Score submissions with an env's official evaluator.")


@eval_app.command("travelplanner")
def travelplanner(
    submission: Path = typer.Option(..., "--submission", "-s", help="Plans, one JSON line per task "
                                    '({"idx", "query", "plan"}), in task order.'),
    tasks: str = typer.Option(None, "--tasks", "-t", help="Task file in the HF field format "
                              "(.jsonl/.json/.csv/.parquet) or a split name of the world "
                              f"({', '.join(SPLITS)}). Default: the tasks embedded in the submission lines."),
    queries: str = typer.Option(None, "--queries", "-q", hidden=True, help="Deprecated name of --tasks."),
    database: Path = typer.Option(None, "--database", "-d", "--world", "-w", help="World folder holding database/ "
                                  "(default: found next to the task or submission file, else "
                                  "$AGENTGYM_TRAVELPLANNER_DB, else the embedded synthetic world; --world is an "
                                  "alias)."),
    evaluator: str = typer.Option(None, "--evaluator", "-e", show_default=False,
                                  help="official (leaderboard verdicts; the default) or strict (no loopholes)."),
    evaluation: str = typer.Option(None, "--evaluation", hidden=True, help="Deprecated name of --evaluator."),
    mode: str = typer.Option(None, "--mode", "-m", hidden=True, help="Deprecated name of --evaluator."),
    output: Path = typer.Option(None, "--output", "-o", help="Write the metrics and every plan's verdicts as JSON."),
    foreign_tasks: bool = typer.Option(False, "--foreign-tasks", help="Score tasks whose cities the world "
                                       "does not have (they fail), instead of stopping."),
    foreign_queries: bool = typer.Option(False, "--foreign-queries", hidden=True,
                                         help="Deprecated name of --foreign-tasks."),
) -> None:
    """Score a TravelPlanner submission: the six official metrics, by level and trip length."""
    if mode is not None:
        evaluator = deprecated_flag("--mode", "--evaluator", mode, evaluator, "official")
    evaluator = deprecated_flag("--evaluation", "--evaluator", evaluation, evaluator, "official")
    tasks = deprecated_flag("--queries", "--tasks", queries, tasks, None)
    if foreign_queries:  # a switch: print the note, then turn the new switch on
        deprecated_flag("--foreign-queries", "--foreign-tasks", "on", None, "on")
        foreign_tasks = True
    if evaluator not in EVALUATORS:
        raise typer.BadParameter(f"{evaluator!r} is not an evaluator; use one of {', '.join(EVALUATORS)}",
                                 param_hint="--evaluator")
    console = plain_console()
    try:
        result = run(submission, tasks=tasks, database=database, evaluator=evaluator, foreign_tasks=foreign_tasks)
    except AgentGymError as exc:
        console.print(labeled("error", "red", str(exc)))
        raise typer.Exit(1) from None
    for warning in result["warnings"]:
        console.print(labeled("warning", "yellow", warning))
    print_metrics(console, result["metrics"], f"on the {world_label(result['database'])}")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(to_json(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        console.print(f"wrote {output}")
