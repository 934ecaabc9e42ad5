"""The error paths a newcomer meets in `agentgym run` (issue 22, items 5-8 and 10): one line naming
the fix, or it just works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.runner import default_out_dir, load_results

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


def run(*args: str, env_id: str = "TravelPlanner-v0"):
    return runner.invoke(app, ["run", env_id, *args], terminal_width=200)


def test_a_misspelt_agent_names_the_agents():
    result = run("--agent", "solvr", "--episodes", "1")
    assert result.exit_code == 2
    assert "did you mean solver" in result.output and "module:factory" in result.output
    assert "String should match pattern" not in result.output


def test_an_agent_module_in_the_current_folder_imports(tmp_path):
    (tmp_path / "myagents_i22.py").write_text(
        "from agentgym.agents import ReplayAgent\n\ndef factory(env):\n    return ReplayAgent(['GiveUp[no]'])\n")
    result = subprocess.run([sys.executable, "-m", "agentgym.cli", "run", "TravelPlanner-v0", "--agent",
                             "myagents_i22:factory", "--episodes", "1", "--quiet", "--no-plot", "--out", "out"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(load_results(tmp_path / "out" / "results.jsonl")) == 1


@pytest.mark.parametrize("target, words", [("no_such_module_i22:factory", "no_such_module_i22"),
                                           ("run_agents_plugin:no_such_factory", "give_up")])
def test_a_missing_agent_module_or_factory_is_one_line(tmp_path, target, words):
    result = run("--agent", target, "--episodes", "1", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert words in result.output and len(result.output.strip().splitlines()) <= 3, result.output
    assert not (tmp_path / "out").exists()


def test_a_failed_run_does_not_block_its_folder(tmp_path):
    out = str(tmp_path / "out")
    bad = run("--agent", "gold", "--episodes", "1", "-k", "databse=X", "--out", out, "--quiet")
    assert bad.exit_code != 0 and "databse" in bad.output
    good = run("--agent", "gold", "--episodes", "1", "--out", out, "--quiet", "--no-plot")
    assert good.exit_code == 0, good.output


def test_a_folder_with_a_manifest_but_no_results_is_free(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"format": 1, "identity": {"env_id": "other"}}))
    result = run("--agent", "gold", "--episodes", "1", "--out", str(out), "--quiet", "--no-plot")
    assert result.exit_code == 0, result.output


def test_a_refused_folder_suggests_out(tmp_path):
    out = str(tmp_path / "out")
    assert run("--agent", "gold", "--episodes", "1", "--out", out, "--quiet", "--no-plot").exit_code == 0
    result = run("--agent", "gold", "--episodes", "1", "--seed", "5", "--out", out, "--quiet", "--no-plot")
    assert result.exit_code == 1 and "--out" in result.output and "seed" in result.output


def test_the_default_folder_tells_apart_what_makes_runs_differ():
    base = default_out_dir("TravelPlanner-v0", "m", None)
    assert base == Path("runs/TravelPlanner-v0__m")
    assert default_out_dir("TravelPlanner-v0", "m", None, seed=3) != base
    assert default_out_dir("TravelPlanner-v0", "m", None, tasks="seed") != base
    one = default_out_dir("TravelPlanner-v0", "m", None, env_kwargs={"action_format": "json"})
    assert one != base and one == default_out_dir("TravelPlanner-v0", "m", None, env_kwargs={"action_format": "json"})


def test_a_curriculum_reward_takes_total_steps_from_the_episodes(tmp_path):
    result = run("--agent", "gold", "--episodes", "2", "--reward", "planner_r1/curriculum",
                 "--out", str(tmp_path / "out"), "--quiet", "--no-plot")
    assert result.exit_code == 0, result.output
    records = load_results(tmp_path / "out" / "results.jsonl")
    assert len(records) == 2 and "failed" not in result.output


def test_a_curriculum_without_total_steps_fails_at_make_or_at_reset_never_at_the_last_step():
    import gymnasium

    from agentgym import ConfigError, ShapeReward

    with pytest.raises(ConfigError, match="total_steps"):
        gymnasium.make("TravelPlanner-v0", reward="planner_r1/curriculum")
    env = ShapeReward(gymnasium.make("TravelPlanner-v0"), "planner_r1/curriculum")  # the clock comes with resets
    with pytest.raises(ConfigError, match="total_steps"):
        env.reset(seed=0)
    env.reset(seed=0, options={"training_step": 1, "total_steps": 10})


def test_the_gold_agent_with_an_env_server_names_the_fix():
    result = run("--agent", "gold", "--env-server", "http://127.0.0.1:9", "--episodes", "1")
    assert result.exit_code == 2 and "NoneType" not in result.output and "--env-server" in result.output


def test_a_bad_reward_fails_before_any_progress_bar(tmp_path):
    result = run("--agent", "gold", "--episodes", "2", "--reward", "planner_r1/nope", "--out", str(tmp_path / "o"))
    assert result.exit_code == 1 and "0/2" not in result.output and "planner_r1/nope" in result.output
    assert not (tmp_path / "o").exists()
