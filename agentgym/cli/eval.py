"""``agentgym eval ENV``: score submissions with an env's official evaluator.

``agentgym eval travelplanner`` reads the submission through ``agentgym.envs.travelplanner.evaluation.submissions``,
which holds the scoring (``run``) and the output (``print_metrics``, ``to_json``) and needs no typer.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agentgym.cli._console import labeled, plain_console
from agentgym.cli._options import deprecated_flag
from agentgym.envs.travelplanner.evaluation import EVALUATIONS
from agentgym.envs.travelplanner.evaluation.submissions import print_metrics, run, to_json
from agentgym.envs.travelplanner.queries import SPLITS
from agentgym.errors import AgentGymError

__all__ = ["eval_app", "travelplanner"]

eval_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                       help="Score submissions with an env's official evaluator.")


@eval_app.command("travelplanner")
def travelplanner(
    submission: Path = typer.Option(..., "--submission", "-s", help="Plans, one JSON line per query "
                                    '({"idx", "query", "plan"}), in query order.'),
    queries: str = typer.Option(None, "--queries", "-q", help="Query file in the HF field format "
                                "(.jsonl/.json/.csv/.parquet) or a split name of the world "
                                f"({', '.join(SPLITS)}). Default: the queries embedded in the submission lines."),
    database: Path = typer.Option(None, "--database", "-d", "--world", "-w", help="World folder holding database/ "
                                  "(default: found next to the query or submission file, else "
                                  "$AGENTGYM_TRAVELPLANNER_DB, else the embedded synthetic world; --world is an "
                                  "alias)."),
    evaluation: str = typer.Option(None, "--evaluation", "-e", show_default=False,
                                   help="official (leaderboard verdicts; the default) or strict (no loopholes)."),
    mode: str = typer.Option(None, "--mode", "-m", hidden=True, help="Deprecated name of --evaluation."),
    output: Path = typer.Option(None, "--output", "-o", help="Write the metrics and every plan's verdicts as JSON."),
    foreign_queries: bool = typer.Option(False, "--foreign-queries", help="Score queries whose cities the world "
                                         "does not have (they fail), instead of stopping."),
) -> None:
    """Score a TravelPlanner submission: the six official metrics, by level and trip length."""
    evaluation = deprecated_flag("--mode", "--evaluation", mode, evaluation, "official")
    if evaluation not in EVALUATIONS:
        raise typer.BadParameter(f"{evaluation!r} is not an evaluation; use one of {', '.join(EVALUATIONS)}",
                                 param_hint="--evaluation")
    console = plain_console()
    try:
        result = run(submission, queries=queries, database=database, evaluation=evaluation,
                     foreign_queries=foreign_queries)
    except AgentGymError as exc:
        console.print(labeled("error", "red", str(exc)))
        raise typer.Exit(1) from None
    for warning in result["warnings"]:
        console.print(labeled("warning", "yellow", warning))
    print_metrics(console, result["metrics"], result["database"])
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(to_json(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        console.print(f"wrote {output}")
