"""A reset that raises leaves the env usable after a good one (issue 22, items 3 and 8).

Gymnasium 1.4's passive env checker remembered a failed first reset and then failed every step
with ``TypeError: cannot unpack non-iterable NoneType object``, even after a good reset.
"""

from __future__ import annotations

import gymnasium
import pytest

import agentgym  # noqa: F401
from agentgym import ConfigError, ResetNeeded

ENVS = [("TravelPlanner-v0", "CitySearch[Texas]"), ("SearchQA-v0", "<search>Paris</search>")]


@pytest.mark.parametrize("env_id, action", ENVS)
def test_a_failed_first_reset_then_a_good_one_steps(env_id, action):
    env = gymnasium.make(env_id)
    with pytest.raises(ConfigError):
        env.reset(options={"no_such_option": 1})
    env.reset(seed=0)
    for _ in range(3):
        observation, *_ = env.step(action)
        assert isinstance(observation, str)


@pytest.mark.parametrize("env_id, action", ENVS)
def test_a_step_after_a_failed_reset_asks_for_a_reset(env_id, action):
    env = gymnasium.make(env_id)
    env.reset(seed=0)
    env.step(action)
    with pytest.raises(ConfigError):
        env.reset(options={"no_such_option": 1})
    with pytest.raises(ResetNeeded):  # not a step in the episode the failed reset abandoned
        env.step(action)


def test_gymnasiums_checker_still_runs_on_the_first_good_reset():
    env = gymnasium.make("TravelPlanner-v0")
    checker = env
    while not isinstance(checker, gymnasium.wrappers.PassiveEnvChecker):
        checker = checker.env
    with pytest.raises(ConfigError):
        env.reset(options={"no_such_option": 1})
    assert checker.checked_reset is False
    env.reset(seed=0)
    assert checker.checked_reset is True


@pytest.mark.parametrize("env_id, action", ENVS)
def test_training_step_options_are_accepted_without_a_reward(env_id, action):
    """The docstrings list them as reset options; an unshaped env checks and ignores them."""
    env = gymnasium.make(env_id)
    env.reset(seed=0, options={"training_step": 3, "total_steps": 10})
    env.step(action)
    with pytest.raises(ConfigError, match="training_step"):
        env.reset(options={"training_step": -1})


def test_the_checker_keeps_the_envs_kwargs_as_given():
    """Gymnasium's checker deep-copies its spec, kwargs included: with the checker applied inside
    ``make_env``, a retriever holding a module (as a dense retriever holds its encoder) failed ``make``."""

    class Retriever:
        def __init__(self):
            self.encoder = pytest  # a module: deepcopy cannot copy it

        def search(self, query, k):
            return []

        def batch_search(self, queries, k):
            return [[] for _ in queries]

    retriever = Retriever()
    env = gymnasium.make("SearchQA-v0", retriever=retriever)
    assert env.unwrapped.spec.kwargs["retriever"] is retriever
    env.reset(seed=0)
    observation, *_ = env.step("<search>Paris</search>")
    assert isinstance(observation, str)
