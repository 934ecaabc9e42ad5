"""Issue 30's CLI papercuts (item 14): each message as its users would expect it."""

from __future__ import annotations

from typer.testing import CliRunner

from agentgym.cli import app

runner = CliRunner()


def test_verl_prepare_refuses_to_write_parquet_under_another_name(tmp_path):
    """Before, ``--out x.csv`` wrote Parquet into x.csv without a word."""
    result = runner.invoke(app, ["verl", "prepare", "TravelPlanner-v0", "--split", "train", "--limit", "1",
                                 "--out", str(tmp_path / "x.csv")], terminal_width=200)
    assert result.exit_code == 2 and not (tmp_path / "x.csv").exists()
    assert "would hold Parquet rows under another name" in result.output
    assert "x.parquet" in " ".join(result.output.split())


def test_travelplanner_world_shows_its_progress(tmp_path):
    """Before, ``--scale full`` printed nothing for 40 s. Each stage now says what it does, on stderr."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "agentgym", "travelplanner", "world", str(tmp_path / "w"),
                           "--scale", "tiny"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    stages = [line.split("s  ", 1)[1] for line in done.stderr.splitlines()]
    assert [s.split(" ")[0] for s in stages] == ["drawing", "drawing", "writing", "opening", "drawing", "drawing",
                                                 "drawing"], done.stderr
    assert "flights" in stages[1] and "the test tasks" in stages[-1]
    assert done.stdout.startswith("wrote a tiny world (seed 0)")
