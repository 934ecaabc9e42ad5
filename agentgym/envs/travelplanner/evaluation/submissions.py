"""Score a submission file like the official ``eval.py`` (the data behind ``agentgym eval travelplanner``).

Plans are matched to tasks by line order (the official script ignores ``idx``). Blank lines
are skipped (with a warning: they would shift every later plan). A line that is not JSON (warned
about, line by line), has no plan, or is missing counts as not delivered; nothing in a plan aborts
the run. A JSON array, or a file with no JSON line at all, is refused: the format is JSON Lines. Without
``--tasks`` each submission line must carry its task as an object under the official ``query`` key (the
``plan_sets/`` format ``{"id", "query": {...}, "plan": [...]}``).

The submission's fields (``idx``, ``query``, ``plan``) are the benchmark's; the ``--output`` JSON keeps
0.1's keys (``to_json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agentgym.envs.travelplanner.evaluation._evaluate import (
    OFFICIAL_METRIC_NAMES, EvaluationReport, Metrics, aggregate, evaluate,
)
from agentgym._deprecated import renamed_kwargs
from agentgym.envs.travelplanner.plan import ParsedPlan
from agentgym.envs.travelplanner.tasks import SPLITS, TravelTask, load_tasks
from agentgym.envs.travelplanner.world import World
from agentgym.errors import DataError

__all__ = ["read_submission", "run", "print_metrics", "to_json"]


@renamed_kwargs({"evaluation": "evaluator", "queries": "tasks", "foreign_queries": "foreign_tasks"})
def run(submission: Path, *, tasks: str | None = None, database: Path | None = None,
        evaluator: str = "official", foreign_tasks: bool = False) -> dict[str, Any]:
    """Evaluate a submission file; the data behind the CLI output.

    Tasks set in cities the world does not have were written for another world (e.g. real
    validation plans scored against the embedded synthetic world): a DataError says so, unless
    ``foreign_tasks``.
    """
    lines, warnings = _read(submission)
    from agentgym.envs.travelplanner.synthetic import open_world  # the embedded world's generator, when needed

    world = open_world(database or _nearby_world(tasks, submission))
    ts = _tasks(tasks, lines, world)
    foreign = [t for t in ts if not _in_world(t, world)]
    if foreign and not foreign_tasks:
        t = foreign[0]
        raise DataError(f"{len(foreign)} of {len(ts)} tasks are set in cities the world at {world.root} does not "
                        f"have (e.g. task {t.id}: {t.org} -> {t.dest}); they were written for another world. "
                        "Pass --database DIR, the world folder holding their database/ (or set "
                        "$AGENTGYM_TRAVELPLANNER_DB), or --foreign-tasks to score them here anyway")
    if foreign:
        warnings.append(f"{len(foreign)} of {len(ts)} tasks are set in cities this world does not have")
    if len(lines) < len(ts):
        warnings.append(f"the submission has {len(lines)} line(s) for {len(ts)} tasks; "
                        "the missing plans count as not delivered")
    elif len(lines) > len(ts):
        warnings.append(f"the submission has {len(lines)} lines for {len(ts)} tasks; the extra lines are ignored")
    plans = [lines[i] if i < len(lines) else None for i in range(len(ts))]
    reports = [evaluate(plan, t, world, evaluator=evaluator) for plan, t in zip(plans, ts, strict=True)]
    return {"evaluator": evaluator, "queries": ts, "reports": reports, "metrics": aggregate(reports, ts),
            "lines": lines, "database": str(world.root), "submission": str(submission),
            "query_source": tasks, "warnings": warnings}


def _in_world(task: TravelTask, world: World) -> bool:
    # The destination of a multi-city trip is a state.
    return task.org in world.city_set and (task.dest in world.city_set or task.dest in world.states)


_LISTED = 20  # unreadable lines warned about one by one; the rest are counted


def read_submission(path: Path) -> list[Any]:
    """The submission lines as parsed JSON, in order (blank lines skipped); an unreadable line
    becomes an undelivered plan."""
    return _read(path)[0]


def _read(path: Path) -> tuple[list[Any], list[str]]:
    """``(lines, warnings)``: the parsed lines, and what was skipped or unreadable."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise DataError(f"cannot read the submission {path}: {exc}") from None
    if text.lstrip().startswith("["):
        _refuse_array(path, text)
    lines: list[Any] = []
    blank: list[int] = []
    unreadable: list[int] = []
    last = 0
    for number, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            blank.append(number)
            continue
        last = number
        try:
            lines.append(json.loads(raw))
        except (ValueError, RecursionError):
            unreadable.append(number)
            lines.append(ParsedPlan(delivered=False, reason=f"line {number} of the submission is not valid JSON"))
    if lines and len(unreadable) == len(lines):
        raise DataError(f"none of the {len(lines)} line(s) of {path} is JSON: a submission is JSON Lines, one "
                        '{"idx", "query", "plan"} object per line')
    return lines, _blank_note(blank, last) + _unreadable_notes(unreadable)


def _refuse_array(path: Path, text: str) -> None:
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        return  # a line that happens to start with "[": read line by line
    if isinstance(whole, list):
        raise DataError(f"{path} is one JSON array; a submission is JSON Lines: one "
                        '{"idx", "query", "plan"} object per line (e.g. with jq: jq -c ".[]" FILE > FILE.jsonl)')


def _blank_note(blank: list[int], last: int) -> list[str]:
    inner = [n for n in blank if n < last]  # blank lines after the last plan shift nothing
    if not inner:
        return []
    shown = ", ".join(map(str, inner[:_LISTED])) + (f" and {len(inner) - _LISTED} more" if len(inner) > _LISTED else "")
    return [f"skipped {len(inner)} blank line(s) (line {shown}): each plan is matched to the task of its "
            "position among the non-blank lines"]


def _unreadable_notes(unreadable: list[int]) -> list[str]:
    notes = [f"line {n} of the submission is not valid JSON; its plan counts as not delivered"
             for n in unreadable[:_LISTED]]
    if len(unreadable) > _LISTED:
        notes.append(f"... and {len(unreadable) - _LISTED} more lines that are not valid JSON")
    return notes


def _tasks(source: str | None, lines: list[Any], world: World) -> list[TravelTask]:
    if source is None:
        return _embedded(lines, "the submission")
    path = Path(source)
    if source not in SPLITS and path.suffix == ".jsonl" and path.is_file():
        rows = read_submission(path)
        if rows and all(isinstance(r, dict) and isinstance(r.get("query"), dict) for r in rows):
            return _embedded(rows, str(path))
    return load_tasks(source, world_root=world.root)


def _embedded(rows: list[Any], where: str) -> list[TravelTask]:
    out = []
    for i, row in enumerate(rows):
        if isinstance(row, ParsedPlan):  # a line that is not JSON
            raise DataError(f"{row.reason}, so it carries no task; fix it, or pass --tasks to read the "
                            "tasks from elsewhere")
        if not (isinstance(row, dict) and isinstance(row.get("query"), dict)):
            raise DataError(f"plan {i + 1} of {where} carries no task (a 'query' object); pass --tasks")
        out.append(TravelTask.from_row(row["query"], id=str(row.get("id") or f"line-{i + 1}")))
    return out


def _nearby_world(tasks: str | None, submission: Path) -> Path | None:
    for anchor in (tasks, submission):
        if anchor and anchor not in SPLITS:
            for folder in list(Path(anchor).resolve().parents)[:2]:
                if (folder / "database").is_dir():
                    return folder
    return None


def print_metrics(console: Console, metrics: Metrics, database: str) -> None:
    """The metrics tables; ``database`` (how the world is named, under the first) is shown as given."""
    title = f"TravelPlanner ({metrics.evaluator} evaluator, {metrics.n_tasks} tasks)"
    table = Table(title=title, caption=database)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("count", justify="right")
    counts = {
        "delivery_rate": (metrics.delivered, metrics.n_tasks),
        "commonsense_micro": (metrics.commonsense_passed, metrics.commonsense_denominator),
        "commonsense_macro": (metrics.commonsense_macro_count, metrics.n_tasks),
        "hard_micro": (metrics.hard_passed, metrics.hard_denominator),
        "hard_macro": (metrics.hard_macro_count, metrics.n_tasks),
        "final_pass_rate": (metrics.final_pass_count, metrics.n_tasks),
    }
    for key, label in OFFICIAL_METRIC_NAMES.items():
        a, b = counts[key]
        table.add_row(label, f"{100 * getattr(metrics, key):.2f}%", f"{a}/{b}")
    console.print(table)
    groups = [(f"level {k}", v) for k, v in metrics.by_level.items()]
    groups += [(f"{k} days", v) for k, v in metrics.by_days.items()]
    if len(groups) > 2:
        by = Table(title="by level and trip length (%)", pad_edge=False)
        by.add_column("group", no_wrap=True)
        for label in ("N", "delivery", "cs micro", "cs macro", "hard micro", "hard macro", "final"):
            # A header may wrap between its words, never be cut (it was "delive…" at 80 columns).
            by.add_column(label, justify="right", min_width=max(map(len, label.split())))
        for name, m in groups:
            by.add_row(name, str(m.n_tasks), *(f"{100 * getattr(m, k):.1f}" for k in OFFICIAL_METRIC_NAMES))
        console.print(by)
    if metrics.errors:
        console.print(f"{metrics.errors} plan(s) hit input the official evaluator cannot read "
                      "(it would abort the run); they are scored as failed (see 'error' in --output)")


def to_json(result: dict[str, Any]) -> dict[str, Any]:
    """The ``--output`` file. Its keys are 0.1's (``queries``, ``n_queries``): files already written stay readable."""
    metrics: Metrics = result["metrics"]
    return {
        "evaluator": result["evaluator"],
        "database": result["database"],
        "submission": result["submission"],
        "queries": result["query_source"],
        "metrics": metrics.official(),
        "counts": {"n_queries": metrics.n_tasks,
                   **metrics.model_dump(exclude={"n_tasks", "by_level", "by_days", "evaluator"})},
        "by_level": {k: v.official() | {"n_queries": v.n_tasks} for k, v in metrics.by_level.items()},
        "by_days": {str(k): v.official() | {"n_queries": v.n_tasks} for k, v in metrics.by_days.items()},
        "plans": [_entry(i, t, r, result["lines"])
                  for i, (t, r) in enumerate(zip(result["queries"], result["reports"], strict=True))],
    }


def _entry(i: int, t: TravelTask, report: EvaluationReport, lines: list[Any]) -> dict[str, Any]:
    line = lines[i] if i < len(lines) else None
    idx = line.get("idx") if isinstance(line, dict) else None
    return {"index": i, "idx": idx, "id": t.id, "level": t.level, "days": t.days,
            **report.to_official(), "failures": report.failures()}
