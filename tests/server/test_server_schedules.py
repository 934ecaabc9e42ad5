"""A scheduled reward over the env server: clients send its clock with each reset.

``gymnasium.make`` refuses a schedule in fractions of the run without a run length; the server,
which has no run of its own, must still serve one to a trainer that sends the run length with
every reset (agentgym's verl loop against ``agentgym.env_server``).
"""

from __future__ import annotations

import pytest
from server_helpers import TOKEN

from agentgym.errors import ConfigError
from agentgym.remote import RemoteEnv


def test_a_curriculum_is_served_and_follows_the_clock_each_reset_sends(live_server):
    env = RemoteEnv(live_server.url, "TravelPlanner-v0", env_kwargs={"reward": "planner_r1/curriculum"}, token=TOKEN)
    try:
        with pytest.raises(ConfigError, match="total_steps"):
            env.reset(seed=0, options={"task_index": 0})  # no clock: refused at reset, with the fix
        stages = []
        for step in (0, 120, 299):
            env.reset(seed=0, options={"task_index": 0, "training_step": step, "total_steps": 300})
            *_, terminated, _, info = env.step("Finish[[]]")
            assert terminated
            stages.append(info["reward"]["stage"])
        assert stages == ["dense", "macro", "sparse"]
    finally:
        env.close()
