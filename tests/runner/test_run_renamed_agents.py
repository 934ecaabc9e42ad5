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


def test_a_run_config_of_0_1_with_the_reference_agent_reads_as_the_gold_agent(tmp_path):
    import agentgym.runner as runner
    from agentgym.runner import GoldAgentConfig, RunConfig

    old = {"env_id": "TravelPlanner-v0", "agent": {"kind": "reference"}, "episodes": 1, "out": str(tmp_path)}
    with pytest.warns(AgentGymDeprecationWarning, match="agent kind 'reference' is deprecated, use 'gold'"):
        config = RunConfig.model_validate(old)
    assert isinstance(config.agent, GoldAgentConfig) and config.identity()["agent"] == {"kind": "gold"}
    with pytest.warns(AgentGymDeprecationWarning, match="GoldAgentConfig"):
        assert runner.ReferenceAgentConfig is GoldAgentConfig


def test_a_0_1_run_of_the_reference_agent_resumes_as_the_gold_agent(tmp_path):
    args = ["run", "TravelPlanner-v0", "--agent", "gold", "--quiet", "--no-plot", "--out", str(tmp_path)]
    assert CliRunner().invoke(app, [*args, "--episodes", "1"]).exit_code == 0
    manifest = next(p for p in tmp_path.iterdir() if p.suffix == ".json" and "identity" in p.read_text())
    manifest.write_text(manifest.read_text().replace('"kind": "gold"', '"kind": "reference"'))  # as 0.1 wrote it
    result = CliRunner().invoke(app, [*args, "--episodes", "2"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert set(load_results(tmp_path / "results.jsonl")) == {0, 1}
