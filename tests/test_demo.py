"""`agentgym demo` shows the SDK working: its outputs, not just its exit code."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD


def test_demo_prints_metrics_and_writes_results(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path), "--episodes", "9"])
    assert result.exit_code == 0, result.output
    for heading in ("official metrics", "pass rate per constraint", "mean reward terms", "SearchQA-v0"):
        assert heading in result.output
    summary = json.loads((tmp_path / "summary.json").read_text())["agents"]
    oracle, weak = summary["oracle"], summary["first-listing baseline"]
    assert oracle["metrics"]["Final Pass Rate"] == 1.0
    assert weak["metrics"]["Final Pass Rate"] < 1.0 and weak["metrics"]["Delivery Rate"] == 1.0
    assert set(oracle["constraint_pass_rates"]) == set(COMMONSENSE) | set(HARD)
    assert weak["constraint_pass_rates"]["is_valid_restaurants"] == 0.0  # one restaurant for every meal
    assert oracle["reward_terms"]["final_pass"] == 1.0 and oracle["mean_reward"] > weak["mean_reward"]
    assert 0.0 <= summary["top-title agent"]["metrics"]["Exact Match"] <= 1.0
    lines = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 9 + 9 + len([a for a in lines if json.loads(a)["agent"] == "top-title agent"])
    for png in ("constraint_pass_rates.png", "reward_terms.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
