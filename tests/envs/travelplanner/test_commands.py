"""`agentgym travelplanner world` writes a world that the env can open."""

from __future__ import annotations

import gymnasium
from typer.testing import CliRunner

from agentgym.cli import app


def test_world_command_writes_an_openable_world(tmp_path):
    result = CliRunner().invoke(app, ["travelplanner", "world", str(tmp_path / "w"), "--scale", "tiny", "--seed", "3"])
    assert result.exit_code == 0, result.output
    env = gymnasium.make("TravelPlanner-v0", database=tmp_path / "w")
    obs, info = env.reset(seed=0)
    assert info["task_id"].startswith("train-") and "Query:" in obs


def test_world_command_names_the_allowed_scales(tmp_path):
    result = CliRunner().invoke(app, ["travelplanner", "world", str(tmp_path / "w"), "--scale", "huge"])
    assert result.exit_code != 0
    assert "scale='huge'" in result.output and "'full'" in result.output
