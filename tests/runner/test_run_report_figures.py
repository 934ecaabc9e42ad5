"""What a run reports (issue 22, item 13): never-scored terms stay, the action-error panel is drawn
whenever actions hit errors, and a TravelPlanner run reports the six official metrics and writes a
submission that `agentgym eval travelplanner` scores the same."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.runner.records import EpisodeRecord
from agentgym.runner.summary import plot, render, summarize

runner = CliRunner()


def _record(i: int, terms: dict, codes: dict) -> EpisodeRecord:
    return EpisodeRecord(episode=i, seed=i, total_reward=0.5, turns=3, terminated=True, truncated=False,
                         reward_terms=terms, error_codes=codes)


def test_a_term_that_never_scored_is_kept_and_named():
    records = [_record(i, {"format": 1.0, "llm_judge": None}, {}) for i in range(3)]
    summary = summarize(records, 3)
    assert summary.reward_terms == {"format": 1.0, "llm_judge": None}
    assert json.loads(summary.model_dump_json())["reward_terms"]["llm_judge"] is None
    from rich.console import Console

    console = Console(record=True, width=120)
    render(summary, console)
    assert "never scored" in console.export_text()


def test_the_error_panel_is_drawn_beside_the_reward_terms(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    drawn = {}
    real = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **k: drawn.setdefault("axes", real(*a, **k)))
    records = [_record(i, {"format": 1.0, "final_pass": 0.0}, {"invalid_argument": 2, "unknown_tool": i})
               for i in range(5)]
    assert plot(records, summarize(records, 5), tmp_path / "s.png") is not None
    titles = [ax.get_title() for ax in drawn["axes"][1].flat]
    assert "reward terms" in titles and "action errors by code" in titles


def _drawn(monkeypatch, records, path):
    """The axes and the figure texts of ``plot``'s figure."""
    import matplotlib.pyplot as plt

    drawn = {}
    real = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **k: drawn.setdefault("axes", real(*a, **k)))
    assert plot(records, summarize(records, len(records)), path) is not None
    fig, axes = drawn["axes"]
    return [ax for ax in axes.flat if ax.axison], [t.get_text() for t in fig.texts if t is not fig._suptitle]


def test_a_panel_that_would_hold_a_single_bar_is_a_line_of_text(tmp_path, monkeypatch):
    """Before, one reward term, one error code or a constant return each took a panel with one bar."""
    pytest.importorskip("matplotlib")
    records = [EpisodeRecord(episode=i, seed=i, total_reward=1.0, turns=3 + i % 2, terminated=True,
                             truncated=False, reward_terms={"format": 1.0}, error_codes={"invalid_argument": 2})
               for i in range(5)]
    axes, texts = _drawn(monkeypatch, records, tmp_path / "s.png")
    assert [ax.get_title() for ax in axes] == ["turns (mean 3.4)"]
    assert texts == ["return: 1 in every episode; reward term format: mean 1.000; action errors: 10 x invalid_argument"]


def test_a_run_where_nothing_varies_is_a_figure_of_its_facts(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    records = [_record(i, {}, {}) for i in range(3)]
    axes, texts = _drawn(monkeypatch, records, tmp_path / "s.png")
    assert axes == [] and texts == ["return: 0.5 in every episode\nturns: 3 actions in every episode"]


def test_a_travelplanner_run_reports_the_official_metrics_and_a_submission(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "TravelPlanner-v0", "--agent", "first-listing", "--episodes", "4",
                                 "--out", str(out), "--quiet", "--no-plot"], terminal_width=200)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["official"]) >= {"Delivery Rate", "Final Pass Rate", "Hard Constraint Micro Pass Rate"}
    scored = runner.invoke(app, ["eval", "travelplanner", "-s", str(out / "submission.jsonl"),
                                 "-o", str(tmp_path / "eval.json")])
    assert scored.exit_code == 0, scored.output
    assert json.loads((tmp_path / "eval.json").read_text())["metrics"] == pytest.approx(summary["official"])


def test_the_summary_modules_old_path_warns_and_serves_the_same_names():
    """``runner/report.py`` held a run's summary while "report" is the evaluator's output: the module is
    ``agentgym.runner.summary`` now, the old path kept for one release."""
    import importlib
    import sys

    from agentgym._deprecated import AgentGymDeprecationWarning

    sys.modules.pop("agentgym.runner.report", None)
    with pytest.warns(AgentGymDeprecationWarning, match="agentgym.runner.summary"):
        old = importlib.import_module("agentgym.runner.report")
    assert old.summarize is summarize and old.plot is plot and old.render is render
