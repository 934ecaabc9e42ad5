"""A TravelPlanner run's official metrics and its submission file for ``agentgym eval travelplanner``.

The env evaluates every delivered plan (``info["report"]``); an episode that ended without one
is scored as undelivered, as the official metrics do. The queries come from the env the run played.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgym.runner.records import EpisodeRecord

__all__ = ["travelplanner_official", "SUBMISSION"]

SUBMISSION = "submission.jsonl"


def travelplanner_official(records: Sequence[EpisodeRecord], env: Any, out: Path) -> dict[str, float]:
    """The six official metrics of ``records`` (played on ``env``), by their names; writes
    ``out/submission.jsonl`` (one ``{"idx", "query", "plan"}`` line per episode, in episode order)."""
    from agentgym.envs.travelplanner.evaluation import EvaluationReport, aggregate, evaluate
    from agentgym.envs.travelplanner.plan import parse_plan

    unwrapped = env.unwrapped
    by_id = {q.id: q for q in unwrapped.tasks}
    played = [(r, by_id[r.task_id]) for r in records if r.task_id in by_id]
    if not played:
        return {}
    reports, lines = [], []
    for record, query in played:
        report = record.report
        plan = parse_plan(record.answer) if record.answer is not None else None
        if isinstance(report, dict) and report.get("evaluator", report.get("evaluation")) == "official":
            reports.append(EvaluationReport.model_validate(report))
        else:  # no plan, or the env evaluated strictly: evaluate the answer the official way
            reports.append(evaluate(plan, query, unwrapped.world, evaluator="official"))
        lines.append(json.dumps({"idx": record.episode + 1, "query": query.to_row(),
                                 "plan": plan.days if plan is not None and plan.delivered else None},
                                ensure_ascii=False))
    (out / SUBMISSION).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return aggregate(reports, [q for _, q in played]).official()
