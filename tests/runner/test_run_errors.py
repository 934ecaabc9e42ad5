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
    assert default_out_dir("TravelPlanner-v0", "m", None, selection="seed") != base
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


def test_a_corrupt_run_manifest_is_one_line_not_a_traceback(tmp_path):
    out = tmp_path / "out"
    assert run("--agent", "gold", "--episodes", "1", "--out", str(out), "--quiet", "--no-plot").exit_code == 0
    (out / "run.json").write_text('{"format": 1, "identity": {', encoding="utf-8")
    result = run("--agent", "gold", "--episodes", "2", "--out", str(out), "--quiet", "--no-plot")
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "run.json is not a run manifest" in result.output and len(result.output.strip().splitlines()) <= 3


def test_the_gold_agent_on_tasks_without_gold_plans_is_refused_up_front(tmp_path):
    """Before, every episode failed ("no gold plan to replay"), then the run said "rerun to retry"."""
    from agentgym.envs.travelplanner.synthetic import default_world_path

    rows = [json.loads(line) for line in (default_world_path() / "queries" / "test.jsonl").read_text().splitlines()]
    (tmp_path / "plain.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "annotated_plan"})
                                                  + "\n" for r in rows[:3]))
    out = tmp_path / "out"
    result = run("--agent", "gold", "--episodes", "3", "-k", f"tasks={tmp_path / 'plain.jsonl'}", "--out", str(out),
                 "--quiet", "--no-plot")
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    text = " ".join(result.output.split())
    assert "3 of the 3 tasks this run plays have none" in text and "--agent solver" in text
    assert "rerun" not in text and not out.exists()


def test_two_module_factory_agents_get_their_own_default_folders(tmp_path, monkeypatch):
    """Before, ``a:factory`` and ``b:factory`` both wrote to runs/TravelPlanner-v0__factory, and the
    second was refused (or resumed the first's results, had their identities matched)."""
    for module in ("agents_a_i30", "agents_b_i30"):
        (tmp_path / f"{module}.py").write_text("from agentgym.agents import ReplayAgent\n\n"
                                               "def factory(env):\n    return ReplayAgent(['GiveUp[no]'])\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("agents_a_i30", "agents_b_i30"):
        result = run("--agent", f"{module}:factory", "--episodes", "1", "--quiet", "--no-plot")
        assert result.exit_code == 0, result.output
    folders = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert folders == ["TravelPlanner-v0__agents_a_i30-factory", "TravelPlanner-v0__agents_b_i30-factory"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_model_endpoint_is_one_line_before_any_episode(tmp_path):
    """Before, each episode retried the refused connection for 46 s in all, and the run then said
    "2 episode(s) failed ... rerun to retry"."""
    out = tmp_path / "out"
    result = run("--base-url", f"http://127.0.0.1:{_free_port()}/v1", "--model", "m", "--episodes", "2",
                 "--out", str(out), "--quiet", "--no-plot")
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    text = " ".join(result.output.split())
    assert "cannot reach the model endpoint http://127.0.0.1:" in text and "Connection refused" in text
    assert "fix --base-url" in text and not out.exists()


def test_an_endpoint_that_takes_the_connection_but_never_answers_is_named(tmp_path):
    """A silent endpoint: the run says what it waits for before the episodes' own timeouts."""
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)  # accepted by the kernel, never answered
        port = server.getsockname()[1]
        result = run("--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", "--episodes", "1",
                     "--timeout", "0.5", "--max-retries", "0", "--out", str(tmp_path / "out"), "--quiet", "--no-plot")
    text = " ".join(result.output.split())
    assert "took the connection but has not answered in 0.5 s" in text and "--timeout 0.5 s" in text
