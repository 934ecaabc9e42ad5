"""TextEnv's extension points are public and abstract: ``on_reset`` and ``on_step`` must be written,
``on_invalid_action`` may be; an env is never mistaken for an agent (``act``)."""

from __future__ import annotations

import gymnasium
import pytest

from agentgym.agents import Agent
from agentgym.core import StepInfo, TextEnv


class _Half(TextEnv):
    def on_reset(self, options):
        return "hi", StepInfo(turn=0)


class _Whole(_Half):
    def on_step(self, action):
        return action, 1.0, True, StepInfo(turn=self.turn, action="answer")


def test_an_env_without_both_hooks_cannot_be_built():
    with pytest.raises(TypeError, match="on_step"):
        _Half()
    with pytest.raises(TypeError, match="on_reset"):
        type("Bare", (TextEnv,), {})()


def test_the_hooks_are_called_by_reset_and_step():
    env = _Whole(max_action_chars=5)
    assert env.reset(seed=0) == ("hi", StepInfo(turn=0).to_info())
    obs, reward, terminated, truncated, info = env.step("too long")
    assert info["error"]["code"] == "action_too_long" and (reward, terminated) == (0.0, False)
    assert env.step("ok")[:3] == ("ok", 1.0, True)


@pytest.mark.parametrize("env_id", ["TravelPlanner-v0", "SearchQA-v0"])
def test_an_env_is_not_an_agent(env_id):
    env = gymnasium.make(env_id, **({"synthetic_size": "small"} if env_id.startswith("Search") else {}))
    assert isinstance(env.unwrapped, TextEnv) and not isinstance(env.unwrapped, Agent)


def test_the_step_result_helpers_build_what_on_step_returns():
    """dm_env's one-line constructors: hooks name what a step does instead of writing 4-tuples."""
    info = StepInfo(turn=1, action="tool")
    assert TextEnv.transition("seen", info=info) == ("seen", 0.0, False, info)
    ended = TextEnv.termination("done", 1.0, info=info)
    assert ended == ("done", 1.0, True, info) and (ended.terminated, ended.reward) == (True, 1.0)

    class Counting(_Half):
        def on_step(self, action):
            if action == "stop":
                return self.termination("bye", 2.0, info=StepInfo(turn=self.turn, action="answer"))
            return self.transition("more", info=StepInfo(turn=self.turn, action="tool"))

    env = Counting(max_turns=3)
    env.reset(seed=0)
    assert env.step("go")[:4] == ("more", 0.0, False, False)
    assert env.step("stop")[:4] == ("bye", 2.0, True, False)
