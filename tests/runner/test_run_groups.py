"""``agentgym run --samples-per-task G``: groups of G episodes per task, as GRPO draws them, resumable."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.errors import ConfigError
from agentgym.runner import RunConfig, default_out_dir, load_results, run_eval

sys.path.insert(0, str(Path(__file__).resolve().parent))
runner = CliRunner()
PERTURBED = {"kind": "perturbed"}


def play(out, env_id="TravelPlanner-v0", episodes=6, samples=3, **fields):
    config = RunConfig(env_id=env_id, agent=PERTURBED, episodes=episodes, samples_per_task=samples, out=out,
                       fsync=False, **fields)
    outcome = run_eval(config)
    assert outcome.complete and not outcome.failed
    return [r for _, r in sorted(load_results(out / "results.jsonl").items())]


def test_every_record_carries_its_group_sample_and_a_distinct_sample_seed(tmp_path):
    records = play(tmp_path / "g")
    assert [(r["group"], r["sample"], r["task_id"]) for r in records] == [
        ("0", 0, "train-0"), ("0", 1, "train-0"), ("0", 2, "train-0"),
        ("1", 0, "train-1"), ("1", 1, "train-1"), ("1", 2, "train-1")]
    assert len({r["seed"] for r in records}) == 6
    # the sample seed makes the samples of one task differ (the perturbed agent draws its edits from it)
    assert len({json.dumps(r["actions"]) for r in records[:3]}) > 1 or len({json.dumps(r["actions"]) for r in records[3:]}) > 1
    assert all(r["prompt"] and r["infos"] and r["clipped"] is False for r in records)
    identity = json.loads((tmp_path / "g" / "run.json").read_text())["identity"]
    assert identity["samples_per_task"] == 3


def test_a_group_drawn_by_seed_shares_its_task(tmp_path):
    records = play(tmp_path / "s", selection="seed", seed=7)
    assert {r["seed"] for r in records[:3]} == {7} and {r["seed"] for r in records[3:]} == {8}
    assert len({r["task_id"] for r in records[:3]}) == 1


def test_a_killed_group_run_resumes_to_the_same_records(tmp_path):
    out = tmp_path / "r"
    whole = play(out)
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:4]) + lines[4][:50])  # killed mid-write of the 5th
    resumed = play(out)
    drop = ("duration_s",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in resumed] == \
        [{k: v for k, v in r.items() if k not in drop} for r in whole]


def test_one_sample_per_task_keeps_the_identity_earlier_runs_resume_from(tmp_path):
    play(tmp_path / "one", episodes=2, samples=1)
    assert "samples_per_task" not in json.loads((tmp_path / "one" / "run.json").read_text())["identity"]
    assert default_out_dir("X", "a", None, samples_per_task=8).name == "X__a__g8"


@pytest.mark.parametrize("episodes, message", [(7, "a multiple of samples_per_task"), (3 * 46, "at most 135")])
def test_episodes_that_are_not_whole_groups_or_too_many_tasks_are_refused(tmp_path, episodes, message):
    config = RunConfig(env_id="TravelPlanner-v0", agent=PERTURBED, episodes=episodes, samples_per_task=3,
                       out=tmp_path / "x", fsync=False)
    with pytest.raises(ConfigError, match=message):
        run_eval(config)
    assert not (tmp_path / "x").exists()


def test_greedy_sampling_of_a_group_is_refused_on_the_command_line(tmp_path):
    result = runner.invoke(app, ["run", "TravelPlanner-v0", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                                 "--samples-per-task", "4", "--episodes", "8", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "--temperature > 0" in result.output


def test_the_openai_agent_samples_each_episode_of_a_group_with_its_own_seed(model, tmp_path):
    stub, url = model
    result = runner.invoke(app, ["run", "TravelPlanner-v0", "--base-url", url, "--model", "stub", "--temperature", "1.0",
                                 "--samples-per-task", "2", "--episodes", "4", "--out", str(tmp_path / "o"),
                                 "--quiet", "--no-plot", "--concurrency", "1"], terminal_width=160)
    assert result.exit_code == 0, result.output
    seeds = [r["seed"] for r in stub.requests]
    assert set(seeds) == {0, 1, 2, 3}  # each request of an episode carries that episode's sample seed
    records = load_results(tmp_path / "o" / "results.jsonl")
    assert {(r["group"], r["sample"]) for r in records.values()} == {("0", 0), ("0", 1), ("1", 0), ("1", 1)}


def test_the_perturbed_agent_plays_searchqa_offline_from_the_command_line(tmp_path):
    result = runner.invoke(app, ["run", "SearchQA-v0", "--agent", "perturbed", "--episodes", "8", "--samples-per-task",
                                 "4", "--out", str(tmp_path / "q"), "--quiet", "--no-plot"], terminal_width=160)
    assert result.exit_code == 0, result.output
    records = load_results(tmp_path / "q" / "results.jsonl")
    assert len(records) == 8 and {r["group"] for r in records.values()} == {"0", "1"}
