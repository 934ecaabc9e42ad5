"""The learning figures of docs/learning.md redraw from their JSON (``learning_curves.py --replot``)
and read as users expect (issue 30, item 15): whole-number steps, a legend that covers no curve,
and no curve drawn twice (TravelPlanner's reward is its valid-call share, so the second panel shows
another behaviour)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("learning_curves", REPO / "examples" / "learning_curves.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("env", ["searchqa", "travelplanner"])
def test_a_learning_figure_redraws_from_its_json_and_reads_well(env, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    script = _script()
    closed = []
    monkeypatch.setattr(plt, "close", closed.append)
    summary = json.loads((REPO / "docs" / f"learning-{env}.json").read_text())
    script.plot(summary, script.ENVS[env], tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    fig, = closed
    fig.canvas.draw()
    panels = fig.axes
    for ax in panels:
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
        assert ax.get_legend() is None  # the legend is the figure's, below the panels
    assert len(fig.legends) == 1
    legend = fig.legends[0].get_window_extent()
    assert all(legend.y1 <= ax.get_window_extent().y0 for ax in panels)

    def means(ax):  # the thick lines: one mean curve per arm
        return [tuple(line.get_ydata()) for line in ax.get_lines() if line.get_linewidth() >= 2]

    assert len(means(panels[0])) == len(summary["curves"]) and means(panels[0]) != means(panels[1])
