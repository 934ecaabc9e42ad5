"""The retired ``--agent`` values (``oracle``, ``reference``) still run their agents for one release, with a warning."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.cli import app
from agentgym.runner import load_results


@pytest.mark.parametrize("old, new", [("oracle", "solver"), ("reference", "gold")])
def test_a_retired_agent_name_plays_the_renamed_agent_and_warns(tmp_path, old, new):
    args = ["run", "TravelPlanner-v0", "--agent", old, "--episodes", "2", "--quiet", "--no-plot"]
    with pytest.warns(AgentGymDeprecationWarning, match=f"--agent {new}"):
        result = CliRunner().invoke(app, [*args, "--out", str(tmp_path)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert all(r["success"] for r in load_results(tmp_path / "results.jsonl").values())
