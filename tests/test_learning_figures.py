"""The learning figures of docs/learning.md redraw from their JSON (``learning_curves.py --replot``)
and read as users expect: whole-number steps, a legend that covers no curve, and no curve drawn
twice (TravelPlanner's reward is its valid-call share, so the second panel shows another behaviour)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("learning_curves", REPO / "examples" / "learning_curves.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


FIGURES = ["searchqa", "travelplanner", "answers", "plans", "schedule", "verl"]


@pytest.mark.parametrize("name", FIGURES)
def test_a_learning_figure_redraws_from_its_json_and_reads_well(name, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    script = _script()
    closed = []
    monkeypatch.setattr(plt, "close", closed.append)
    data = json.loads((REPO / "docs" / "img" / f"learning-{name}.json").read_text())
    if name == "verl":
        pytest.importorskip("verl")
        script._verl().plot(data, tmp_path / "curves.png")
        arms = [key for key in data if isinstance(data[key], dict)]
    else:
        script.plot(data["curves"], script.FIGURES[name], len(data["seeds"]), tmp_path / "curves.png")
        arms = list(data["curves"])
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

    assert len(means(panels[0])) == len(arms) and means(panels[0]) != means(panels[1])
