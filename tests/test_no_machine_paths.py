"""Figures and tables get shared: they name a world without this machine's absolute paths (issue 30,
item 15). Before, the demo's figure title read "on the database at /home/.../travelplanner" and
``eval``'s table caption was the world's absolute folder."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.envs.travelplanner.world import DATABASE_ENV_VAR, cache_base


def test_the_demo_figure_names_its_database_by_folder_name(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.figure

    from agentgym.demo._play import run_demo
    from agentgym.envs.travelplanner.synthetic import generate_world

    root = generate_world(tmp_path / "my-world", seed=5, scale="tiny")
    monkeypatch.setenv(DATABASE_ENV_VAR, str(root))
    titles: list[str] = []
    real = matplotlib.figure.Figure.suptitle
    monkeypatch.setattr(matplotlib.figure.Figure, "suptitle",
                        lambda self, t, **k: titles.append(t) or real(self, t, **k))
    run_demo(tmp_path / "out", episodes=3, qa_episodes=2)
    travel = [t for t in titles if t.startswith("TravelPlanner-v0")]
    assert travel and all(str(tmp_path) not in t for t in titles), titles
    assert "on the database my-world/" in travel[0]


def test_eval_names_the_world_it_scored_against_without_its_path(tmp_path):
    runner = CliRunner()
    out = tmp_path / "run"
    played = runner.invoke(app, ["run", "TravelPlanner-v0", "--agent", "first-listing", "--episodes", "2",
                                 "--out", str(out), "--quiet", "--no-plot"], terminal_width=200)
    assert played.exit_code == 0, played.output
    scored = runner.invoke(app, ["eval", "travelplanner", "-s", str(out / "submission.jsonl")], terminal_width=200)
    assert scored.exit_code == 0, scored.output
    assert "on the embedded synthetic world" in scored.output
    assert str(cache_base(None)) not in scored.output and str(tmp_path) not in scored.output
