"""`agentgym travelplanner generate` and `solve`: deterministic task files, official submissions."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.envs.travelplanner.evaluation.submissions import run
from agentgym.envs.travelplanner.synthetic import generate_world


def test_generate_then_solve_then_evaluate(tmp_path):
    root = generate_world(tmp_path / "world", seed=2, scale="tiny")
    out = tmp_path / "q.jsonl"
    args = ["travelplanner", "generate", "--world", str(root), "--n", "9", "--seed", "4", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "wrote 9 tasks" in result.output and "tasks/s" in result.output
    first = out.read_bytes()
    assert CliRunner().invoke(app, args).exit_code == 0 and out.read_bytes() == first
    rows = [json.loads(line) for line in first.decode().splitlines()]
    assert len(rows) == 9 and all(r["annotated_plan"] for r in rows)

    sub = tmp_path / "sub.jsonl"
    result = CliRunner().invoke(app, ["travelplanner", "solve", "--tasks", str(out), "--database", str(root),
                                      "--out", str(sub)])
    assert result.exit_code == 0, result.output
    assert "9 solved (9 proven cheapest), 0 proved infeasible, 0 timed out" in result.output
    lines = [json.loads(line) for line in sub.read_text().splitlines()]
    assert [line["idx"] for line in lines] == list(range(1, 10)) and all(line["plan"] for line in lines)
    for evaluation in ("official", "strict"):
        metrics = run(sub, tasks=str(out), database=root, evaluator=evaluation)["metrics"]
        assert metrics.final_pass_rate == 1.0


def test_solve_reports_infeasible_tasks_with_a_null_plan(tmp_path):
    root = generate_world(tmp_path / "world", seed=2, scale="tiny")
    rows = [json.loads(line) for line in (root / "queries" / "train.jsonl").read_text().splitlines()]
    rows[0]["budget"] = 1
    (root / "poor.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    sub = tmp_path / "sub.jsonl"
    args = ["travelplanner", "solve", "--tasks", str(root / "poor.jsonl"), "--out", str(sub)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output  # the world is found next to the task file
    assert "8 solved" in result.output and "1 proved infeasible" in result.output
    assert json.loads(sub.read_text().splitlines()[0])["plan"] is None


def test_generate_reports_a_bad_world(tmp_path):
    args = ["travelplanner", "generate", "--world", str(tmp_path), "--out", str(tmp_path / "q")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "not a TravelPlanner world" in result.output
