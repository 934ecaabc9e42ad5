"""`agentgym run` and `agentgym list` as users call them (typer's CliRunner, real loopback servers)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from run_helpers import EPISODES
from typer.testing import CliRunner

import agentgym
from agentgym.agents.stub import Fault
from agentgym.cli import app
from agentgym.errors import ConfigError
from agentgym.runner import default_out_dir, load_results
from agentgym.server import ServerConfig, create_app
from agentgym.server.live_server import LiveServer

sys.path.insert(0, str(Path(__file__).resolve().parent))
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["run", "TravelPlanner-v0", *args], terminal_width=160, catch_exceptions=False)


def chat(url: str, out: Path, *extra: str) -> list[str]:
    return ["--base-url", url, "--model", "stub", "--out", str(out), "--quiet", *extra]


def test_list_names_envs_reward_presets_terms_and_recipes():
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0
    for name in ("TravelPlanner-v0", "SearchQA-v0", "planner_r1/dense", "prs/short", "final_pass", "la_bleu"):
        assert name in result.output
    listed = json.loads(runner.invoke(app, ["list", "--json"]).output)
    assert set(listed) == {"envs", "reward_presets", "reward_terms", "recipes", "notes"}


def test_list_reads_each_part_from_the_module_that_owns_it():
    from agentgym.integrations.trl.train import RECIPES as TRL_RECIPES
    from agentgym.integrations.verl.train import RECIPES
    from agentgym.rewards import PRESETS

    listed = json.loads(runner.invoke(app, ["list", "--json"]).output)
    assert listed["reward_presets"] == list(PRESETS) and listed["recipes"] == [*RECIPES, *TRL_RECIPES]
    assert listed["envs"] == list(agentgym.ENV_IDS) and listed["notes"] == {}


def test_list_copes_without_the_rewards_and_verl_packages(monkeypatch):
    from agentgym.cli import _catalog as catalog

    monkeypatch.setitem(catalog._PARTS, "reward_presets", ("agentgym.no_such_rewards", "PRESETS"))
    monkeypatch.setitem(catalog._PARTS, "recipes", ("agentgym.no_such_verl", "RECIPES"))
    monkeypatch.setitem(catalog._PARTS, "trl_recipes", ("agentgym.no_such_trl", "RECIPES"))
    found = catalog.catalog()
    assert found["envs"] and found["reward_presets"] == [] and found["recipes"] == []
    assert "no_such_rewards" in found["notes"]["reward_presets"]
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0 and "none:" in result.output


def test_run_evaluates_a_served_model_with_a_table_results_and_a_plot(model, tmp_path):
    _, url = model
    result = run(*chat(url, tmp_path, "--episodes", "4", "--concurrency", "2", "--reward", "planner_r1/dense",
                       "-k", "action_format=json", "-k", "max_turns=40"))
    assert result.exit_code == 0, result.output
    assert "success rate" in result.output and "100.0%" in result.output and "final_pass" in result.output
    results = load_results(tmp_path / "results.jsonl")
    assert sorted(results) == [0, 1, 2, 3]
    assert all(r["success"] and r["reward_terms"]["final_pass"] == 1.0 and r["usage"]["requests"] for r in
               results.values())
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["success_rate"] == 1.0 and set(summary["reward_terms"]) >= {"schema", "final_pass"}
    assert (tmp_path / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_rerun_resumes_and_plays_no_episode_twice(model, tmp_path):
    stub, url = model
    assert run(*chat(url, tmp_path, "--episodes", "3")).exit_code == 0
    first_turns = {json.dumps(r["messages"][0]) for r in stub.requests}
    stub.requests.clear()
    result = run(*chat(url, tmp_path, "--episodes", str(EPISODES)))
    assert result.exit_code == 0
    replayed = {json.dumps(r["messages"][0]) for r in stub.requests}
    assert len(replayed) == EPISODES - 3 and not replayed & first_turns
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["episode"] for line in lines) == list(range(EPISODES))
    again = run(*chat(url, tmp_path, "--episodes", str(EPISODES)))
    assert again.exit_code == 0 and len((tmp_path / "results.jsonl").read_text().splitlines()) == EPISODES


def test_a_rerun_with_another_model_into_the_same_folder_is_refused(model, tmp_path):
    _, url = model
    assert run(*chat(url, tmp_path, "--episodes", "1")).exit_code == 0
    result = run("--base-url", url, "--model", "other", "--out", str(tmp_path), "--episodes", "1", "--quiet")
    assert result.exit_code == 1 and "agent" in result.output


def test_a_failed_episode_is_left_out_then_played_by_the_rerun(model, tmp_path):
    stub, url = model
    stub.inject(Fault(status=400))
    result = run(*chat(url, tmp_path, "--episodes", "3", "--concurrency", "1"))
    assert result.exit_code == 1 and "1 episode(s) failed" in result.output
    assert sorted(load_results(tmp_path / "results.jsonl")) == [1, 2]
    assert json.loads((tmp_path / "errors.jsonl").read_text())["episode"] == 0
    assert run(*chat(url, tmp_path, "--episodes", "3")).exit_code == 0
    assert sorted(load_results(tmp_path / "results.jsonl")) == [0, 1, 2]


def test_permanent_agent_errors_can_be_recorded_as_failed_episodes(model, tmp_path):
    stub, url = model
    stub.inject(Fault(status=400))
    result = run(*chat(url, tmp_path, "--episodes", "2", "--concurrency", "1", "--record-agent-errors"))
    assert result.exit_code == 0 and "agent errors (recorded)" in result.output
    results = load_results(tmp_path / "results.jsonl")
    assert results[0]["agent_error"].startswith("ModelEndpointError") and results[0]["success"] is False
    assert results[1]["success"] is True


def test_a_model_that_fails_every_request_stops_the_run_early(model, tmp_path):
    """(A model that is down altogether is refused before the run: test_run_errors.py.)"""
    stub, url = model
    stub.inject(*[Fault(status=503)] * 100)
    result = run(*chat(url, tmp_path, "--episodes", "40", "--concurrency", "2", "--max-retries", "0"))
    assert result.exit_code == 1 and "stopped early" in result.output
    assert len(load_results(tmp_path / "results.jsonl")) == 0


def test_run_plays_the_env_on_an_env_server(model, tmp_path):
    _, url = model
    with LiveServer(create_app(ServerConfig(tokens=("env-token",)))) as env_server:
        result = run(*chat(url, tmp_path, "--episodes", "2", "--env-server", env_server.url,
                           "--env-token", "env-token", "-k", "action_format=json"))
    assert result.exit_code == 0, result.output
    assert all(r["success"] for r in load_results(tmp_path / "results.jsonl").values())


def test_run_takes_the_gold_replay_and_your_own_agent(tmp_path):
    result = run("--agent", "gold", "--episodes", "3", "--out", str(tmp_path / "ref"), "--quiet", "--no-plot")
    assert result.exit_code == 0 and "100.0%" in result.output
    result = run("--agent", "run_agents_plugin:give_up", "--episodes", "2", "--out", str(tmp_path / "own"), "--quiet")
    assert result.exit_code == 0 and "0.0%" in result.output
    assert [r["terminated_reason"] for r in load_results(tmp_path / "own" / "results.jsonl").values()] == [
        "give_up", "give_up"]


@pytest.mark.parametrize("args, message", [
    (["--agent", "openai"], "--base-url"),
    (["--agent", "openai", "--base-url", "http://x/v1", "--model", "m", "--env-server", "http://y",
      "--reward", "planner_r1/dense"], "--reward"),
    (["--agent", "gold", "-k", "novalue"], "KEY=VALUE"),
])
def test_run_rejects_incomplete_options(args, message):
    result = runner.invoke(app, ["run", "TravelPlanner-v0", *args], terminal_width=200)
    assert result.exit_code == 2 and message in result.output


def test_the_default_folder_is_the_same_for_the_same_command():
    assert default_out_dir("TravelPlanner-v0", "Qwen/Qwen3-8B", "planner_r1/dense") == Path(
        "runs/TravelPlanner-v0__Qwen-Qwen3-8B__planner_r1-dense")


def test_more_episodes_than_tasks_is_refused_up_front_unless_tasks_are_drawn(tmp_path):
    result = run("--agent", "gold", "--episodes", "1000", "--out", str(tmp_path / "a"), "--quiet")
    assert result.exit_code == 1 and "--selection seed" in result.output
    result = run("--agent", "run_agents_plugin:give_up", "--episodes", "50", "--selection", "seed",
                 "--concurrency", "4", "--out", str(tmp_path / "b"), "--quiet", "--no-plot")
    assert result.exit_code == 0 and len(load_results(tmp_path / "b" / "results.jsonl")) == 50


def test_an_unknown_env_id_names_the_registered_ones():
    from typer.testing import CliRunner

    from agentgym.cli import app

    result = CliRunner().invoke(app, ["run", "NoSuchEnv-v0", "--base-url", "http://127.0.0.1:9", "--model", "m"])
    assert result.exit_code == 2
    assert "env_id='NoSuchEnv-v0' is not allowed" in result.output and "TravelPlanner-v0" in result.output


@pytest.mark.parametrize("env_id, agent, reward", [("SearchQA-v0", "top-title", "prs/short"),
                                                   ("TravelPlanner-v0", "solver", None),
                                                   ("TravelPlanner-v0", "first-listing", "planner_r1/dense")])
def test_the_demos_offline_agents_are_reachable_from_run(tmp_path, env_id, agent, reward):
    args = ["run", env_id, "--agent", agent, "--episodes", "4", "--out", str(tmp_path), "--quiet"]
    result = runner.invoke(app, args + (["--reward", reward] if reward else []), terminal_width=200)
    assert result.exit_code == 0, result.output
    records = load_results(tmp_path / "results.jsonl")
    assert len(records) == 4 and not (tmp_path / "errors.jsonl").exists()
    if agent == "solver":
        assert all(r["success"] for r in records.values())
    if agent == "first-listing":
        assert not any(r["success"] for r in records.values())
    assert f"plot:    {tmp_path / 'summary.png'}" in result.output  # run says where its plot is
    assert f"{env_id}: {agent}" in result.output


def test_an_offline_agent_for_another_env_is_refused():
    result = runner.invoke(app, ["run", "SearchQA-v0", "--agent", "solver"], terminal_width=200)
    assert result.exit_code == 2 and "the solver agent plays TravelPlanner-v0, not SearchQA-v0" in result.output


def test_the_no_plot_hint_keeps_its_brackets(tmp_path, monkeypatch):
    import agentgym._plotting

    monkeypatch.setattr(agentgym._plotting, "pyplot", lambda: None)
    result = run("--agent", "gold", "--episodes", "1", "--out", str(tmp_path), "--quiet")
    assert result.exit_code == 0
    assert "no plot: matplotlib is not installed (pip install 'agentgym-rl[plot]')" in result.output
    assert "plot:" not in result.output.replace("no plot:", "")


def test_messages_print_square_brackets_as_written(tmp_path, monkeypatch):
    from agentgym.cli import run as run_cli

    def boom(config, progress):
        raise ConfigError("action", "CitySearch[Texas]", "[bold]a json tool call[/]")

    monkeypatch.setattr(run_cli, "run_eval", boom)
    result = run("--agent", "gold", "--episodes", "1", "--out", str(tmp_path), "--quiet")
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "error: action='CitySearch[Texas]' is not allowed; expected [bold]a json tool call[/]" in text


def _records(returns: list[float], turns: list[int], terms: dict[str, float] | None = None,
             codes: dict[str, int] | None = None) -> list:
    from agentgym.runner.records import EpisodeRecord

    return [EpisodeRecord(episode=i, seed=i, total_reward=r, turns=t, terminated=True, truncated=False,
                          success=r > 0, reward_terms=terms or {}, error_codes=codes or {})
            for i, (r, t) in enumerate(zip(returns, turns, strict=True))]


def _figure(monkeypatch, records, title="TravelPlanner-v0: solver, reward planner_r1/dense"):
    import matplotlib.pyplot as plt

    from agentgym.runner.summary import plot, summarize

    closed = []
    monkeypatch.setattr(plt, "close", closed.append)
    path = plot(records, summarize(records, len(records)), Path(os.environ["AGENTGYM_CACHE_DIR"]) / "p.png",
                title=title)
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return closed[0]


def test_the_run_figure_names_the_run_and_labels_its_axes(monkeypatch):
    pytest.importorskip("matplotlib")
    fig = _figure(monkeypatch, _records([0.0, 1.0, 0.5], [3, 5, 4], terms={"final_pass": 0.0, "schema": 1.0}))
    assert fig._suptitle.get_text().startswith("TravelPlanner-v0: solver, reward planner_r1/dense: N = 3 episodes")
    assert len(fig.axes) == 3
    for ax in fig.axes:
        assert ax.get_xlabel() and (ax.get_ylabel() or ax is fig.axes[2])
    assert fig.axes[2].get_ylabel() == "reward term"
    labels = [t.get_text() for t in fig.axes[2].texts]
    assert "0.00" in labels  # a zero term is labelled, not an invisible bar


def test_no_empty_panel_is_drawn(monkeypatch):
    pytest.importorskip("matplotlib")
    fig = _figure(monkeypatch, _records([1.0, 0.0], [4, 5]))
    assert len(fig.axes) == 2  # no reward terms, no action errors: no third panel


def test_constant_values_are_named_not_drawn_as_one_bar(monkeypatch):
    """(issue 30: a constant return, turn count or a lone error code is a line of text, not a panel.)"""
    pytest.importorskip("matplotlib")
    fig = _figure(monkeypatch, _records([1.0] * 5, [7] * 5, codes={"invalid_argument": 1}))
    assert [ax for ax in fig.axes if ax.axison] == []
    facts = [t.get_text() for t in fig.texts if t is not fig._suptitle]
    assert facts == ["return: 1 in every episode\nturns: 7 actions in every episode\naction errors: 5 x invalid_argument"]
