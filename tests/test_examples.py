"""The example scripts run as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("args, expected", [
    (["play_travelplanner.py", "--seed", "2"], "final pass: True"),
    (["play_travelplanner.py", "--format", "json", "--mode", "sole-planning"], "final pass: True"),
    (["shape_rewards.py"], "schema"),
])
def test_example_runs(args, expected):
    _run(args, expected)


def test_the_reward_lab_example_runs_small(tmp_path):
    _run(["reward_lab.py", "--tasks", "3", "--samples", "3", "--out", str(tmp_path / "runs"), "--figures",
          str(tmp_path / "img")], "probe 'unknown_transport' earns as much as the passing answer")
    assert (tmp_path / "img" / "reward-lab-travelplanner.png").exists()


def _run(args, expected):
    out = subprocess.run([sys.executable, str(EXAMPLES / args[0]), *args[1:]], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert expected in out.stdout
