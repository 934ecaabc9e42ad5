"""The demo names what it measured (issue 22, item 12): the world, the evaluator behind each
figure, and the N behind each hard-constraint rate."""

from __future__ import annotations

import json

import pytest

from agentgym.demo._play import run_demo, world_name
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD
from agentgym.envs.travelplanner.world import DATABASE_ENV_VAR


def test_the_world_is_named_from_where_the_database_comes_from(monkeypatch):
    monkeypatch.delenv(DATABASE_ENV_VAR, raising=False)
    assert world_name() == "embedded synthetic world"
    monkeypatch.setenv(DATABASE_ENV_VAR, "/data/travelplanner")
    assert world_name() == "database travelplanner/"  # figures are shared: no machine path (issue 30)


def test_summary_names_world_evaluators_and_per_constraint_n(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.figure

    titles: list[str] = []
    real = matplotlib.figure.Figure.suptitle
    monkeypatch.setattr(matplotlib.figure.Figure, "suptitle", lambda self, t, **k: titles.append(t) or real(self, t, **k))
    run_demo(tmp_path, episodes=6, qa_episodes=3)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["world"] == "embedded synthetic world"
    assert summary["travelplanner_evaluators"] == {"metrics and constraints": "official", "reward terms": "strict"}
    counts = summary["agents"]["solver"]["constraint_counts"]
    assert all(counts[c] == 6 for c in COMMONSENSE) and all(0 <= counts[c] <= 6 for c in HARD)
    assert any("embedded synthetic world" in t for t in titles)
    assert not any("official evaluator" in t for t in titles)  # one evaluator per panel, not per figure
