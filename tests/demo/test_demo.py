"""`agentgym demo` shows the SDK working: its outputs, not just its exit code, also on a plain install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD

REPO = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def test_demo_prints_metrics_and_writes_results(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path), "--episodes", "9"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for heading in ("official metrics", "pass rate per constraint", "mean reward terms", "SearchQA-v0"):
        assert heading in result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    agents = summary["agents"]
    solver, weak = agents["solver"], agents["first-listing baseline"]
    assert solver["metrics"]["Final Pass Rate"] == 1.0
    assert weak["metrics"]["Final Pass Rate"] < 1.0 and weak["metrics"]["Delivery Rate"] == 1.0
    assert set(solver["constraint_pass_rates"]) == set(COMMONSENSE) | set(HARD)
    assert weak["constraint_pass_rates"]["is_valid_restaurants"] == 0.0  # one restaurant for every meal
    assert solver["reward_terms"]["final_pass"] == 1.0 and solver["mean_reward"] > weak["mean_reward"]
    assert 0.0 <= agents["top-title agent"]["metrics"]["Exact Match"] <= 1.0
    lines = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 9 + 9 + len([a for a in lines if json.loads(a)["agent"] == "top-title agent"])
    # One figure per env, and the output names exactly the files written.
    assert summary["files"] == ["summary.json", "episodes.jsonl", "travelplanner.png", "searchqa.png"]
    assert summary["skipped"] == {}
    for png in ("travelplanner.png", "searchqa.png"):
        assert (tmp_path / png).read_bytes()[:8] == PNG
    assert "summary.json, episodes.jsonl, travelplanner.png, searchqa.png" in result.output
    assert "*.png" not in result.output


# Stands in for `pip install agentgym-rl` on a clean machine: the demo runs in a subprocess where every
# installed distribution outside the closure of pyproject's core `dependencies` cannot be imported
# (matplotlib, pandas, datasets, starlette, uvicorn, sacrebleu unless it is core, verl, ...).
# A real throwaway venv would need PyPI and minutes; the blocker is computed from the same metadata pip
# resolves, so a new core dependency or a new optional import is covered without editing this test.
_PLAIN_INSTALL = r'''
import re, sys, tomllib
from importlib import metadata
from importlib.abc import MetaPathFinder
from packaging.requirements import Requirement

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

project = tomllib.load(open(sys.argv[1], "rb"))["project"]
todo = [Requirement(d) for d in project["dependencies"]]
core = {norm(project["name"])}  # agentgym's own distribution
while todo:
    req = todo.pop()
    if norm(req.name) in core or (req.marker and not req.marker.evaluate({"extra": ""})):
        continue
    core.add(norm(req.name))
    try:
        todo += [Requirement(r) for r in metadata.requires(req.name) or ()]
    except metadata.PackageNotFoundError:
        pass
blocked = {m for m, dists in metadata.packages_distributions().items() if not any(norm(d) in core for d in dists)}

class Block(MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

for name in [m for m in sys.modules if m.partition(".")[0] in blocked]:
    del sys.modules[name]
sys.meta_path.insert(0, Block())
print("BLOCKED", " ".join(sorted(blocked)))
sys.argv = ["agentgym", *sys.argv[2:]]
from agentgym.cli import main
main()
'''


def test_demo_on_a_plain_install_says_what_it_skipped_and_why(tmp_path):
    out = subprocess.run([sys.executable, "-c", _PLAIN_INSTALL, str(REPO / "pyproject.toml"), "demo", "--out",
                          str(tmp_path), "--episodes", "3"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "200"}, cwd=REPO)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    blocked = set(text.split("BLOCKED ", 1)[1].split("\n", 1)[0].split())
    assert {"matplotlib", "pandas", "datasets", "starlette", "uvicorn"} <= blocked
    assert "Traceback" not in text
    # The plots are skipped with the reason and the extra, brackets intact; no PNG is claimed or written.
    assert "skipped plots: matplotlib is not installed (pip install 'agentgym-rl[plot]')" in text
    assert not list(tmp_path.glob("*.png")) and ".png" not in text
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["files"] == ["summary.json", "episodes.jsonl"]
    assert "plots" in summary["skipped"]
    assert summary["agents"]["solver"]["metrics"]["Final Pass Rate"] == 1.0  # the main job ran
    for part, why in summary["skipped"].items():
        assert f"skipped {part}: {why}" in " ".join(text.split()) and "pip install" in why
