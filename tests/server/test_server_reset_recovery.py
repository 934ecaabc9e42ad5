"""A failed reset leaves a session usable after a good one (issue 22, item 3), and a reward a
session's env cannot score is refused when the session is made (item 2)."""

from __future__ import annotations

import pytest
from server_helpers import TOKEN

from agentgym import ConfigError
from agentgym.remote import RemoteEnv


@pytest.mark.parametrize("env_id, action", [("TravelPlanner-v0", "CitySearch[Texas]"),
                                            ("SearchQA-v0", "<search>Paris</search>")])
def test_a_session_steps_after_a_failed_then_a_good_reset(live_server, env_id, action):
    env = RemoteEnv(live_server.url, env_id, token=TOKEN)
    try:
        with pytest.raises(ConfigError):
            env.reset(options={"no_such_option": 1})
        env.reset(seed=0)
        for _ in range(3):
            observation, _, terminated, truncated, info = env.step(action)
            assert isinstance(observation, str) and not info.get("error")
    finally:
        env.close()


def test_a_reward_that_does_not_fit_the_env_is_refused_at_session_start(live_server):
    with pytest.raises(ConfigError) as caught:
        RemoteEnv(live_server.url, "SearchQA-v0", token=TOKEN, env_kwargs={"reward": "planner_r1/dense"})
    assert "SearchQA" in str(caught.value)
