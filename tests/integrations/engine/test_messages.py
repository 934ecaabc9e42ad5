"""The message-level episode the verifiers, tinker-cookbook and skyrl-gym bridges share."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.errors import ConfigError, ResetNeeded
from agentgym.integrations.messages import MessageEpisode, env_task
from agentgym.integrations.rollouts import EnvPool
from agentgym.core.turn_cut import TurnCut

from scripted_episodes import AFTER_ACTION, REWARDS, dead_retriever, direct_total, scripts


@pytest.fixture
def searchqa():
    return MessageEpisode(env_task("SearchQA-v0", {"seed": 0}, reward=REWARDS["SearchQA-v0"]), pool=EnvPool())


@pytest.mark.parametrize("env_id", ["SearchQA-v0", "TravelPlanner-v0"])
def test_a_scripted_episode_ends_with_the_spec_total_and_its_terms(env_id):
    table = scripts(env_id, 1)
    ((prompt, replies),) = table.items()
    episode = MessageEpisode(env_task(env_id, {"seed": 0, "options": {"task_index": 0}}, reward=REWARDS[env_id]))
    assert episode.reset() == prompt  # the env's own text, no wrapping
    for reply in replies:
        episode.step(reply)
    end = episode.end()
    total, terms = direct_total(env_id, replies, seed=0, index=0)
    assert episode.done and end.total == total and end.terms == terms and end.outcome == 1.0
    assert end.failure is None and end.stop_reason == "terminated" and end.num_turns == len(replies)
    assert end.metrics["score"] == total and end.metrics["masked"] == 0.0
    assert all(AFTER_ACTION not in action for action in episode.actions)


def test_the_async_calls_run_on_the_env_threads(searchqa):
    async def play():
        prompt = await searchqa.areset()
        await searchqa.astep("<answer>x</answer>")
        return prompt

    assert asyncio.run(play()) and searchqa.done


@pytest.mark.parametrize("during", ["reset", "step"])
def test_an_env_that_raises_is_a_typed_failure(searchqa, monkeypatch, during):
    def broken(*args, **kwargs):
        raise OSError("disk gone")

    env = searchqa.unwrapped  # acquires the episode's env
    if during == "reset":
        monkeypatch.setattr(env, "reset", broken)
        assert searchqa.reset() == ""
    else:
        searchqa.reset()
        monkeypatch.setattr(searchqa.env, "step", broken)
        assert searchqa.step("<answer>x</answer>") == ""
    end = searchqa.end()
    assert searchqa.done and end.failure.reason == ("reset_failed" if during == "reset" else "env_error")
    assert "OSError: disk gone" in end.failure.message and end.stop_reason == "failed"
    assert end.total == 0.0 and end.metrics["failed"] == 1.0 and end.metrics["masked"] == 1.0
    searchqa.close()  # an env whose call raised is closed, never handed to the next episode
    assert searchqa.pool.idle_count(searchqa.task) == 0


def test_a_failure_the_env_reports_in_info_ends_the_episode():
    episode = MessageEpisode(env_task("SearchQA-v0", env_kwargs={"retriever": dead_retriever()}))
    episode.reset()
    episode.step("<search>capital</search>")
    assert episode.done and episode.failure.reason == "retriever_unreachable"


def test_the_callers_mistakes_raise(searchqa):
    with pytest.raises(ConfigError, match="task_index"):
        MessageEpisode(env_task("SearchQA-v0", {"options": {"task_index": 10**6}})).reset()
    with pytest.raises(ConfigError, match="start"):
        env_task("SearchQA-v0", {"seed": 1, "opts": {}})
    with pytest.raises(ConfigError, match="env_id"):
        env_task("")
    searchqa.reset()
    searchqa.step("<answer>x</answer>")
    with pytest.raises(ResetNeeded):
        searchqa.step("<answer>x</answer>")


def test_max_turns_ends_an_unfinished_episode_unpaid():
    episode = MessageEpisode(env_task("SearchQA-v0", reward=REWARDS["SearchQA-v0"]), max_turns=1)
    episode.reset()
    episode.step("<search>a</search>")
    end = episode.end()
    assert episode.done and end.stop_reason == "max_turns" and end.total == 0.0 and end.failure is None
    assert end.metrics["truncated"] == 1.0


def test_episodes_of_one_task_reuse_the_pooled_env():
    pool = EnvPool()
    task = env_task("SearchQA-v0", {"seed": 0, "options": {"task_index": 1}}, reward=REWARDS["SearchQA-v0"])
    first = MessageEpisode(task, pool=pool)
    prompt = first.reset()
    env = first.env
    first.close()
    second = MessageEpisode(task, pool=pool)
    assert second.reset() == prompt and second.env is env


SEARCHQA = MessageEpisode(env_task("SearchQA-v0"), pool=EnvPool())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", " ", "<", "/", "<search>", "</search>", "<answer>", "</answer>", "<think>",
                                  "</think>"]), max_size=20).map("".join))
def test_the_action_is_the_reply_up_to_where_the_env_stops_reading(reply):
    action = SEARCHQA.action_of(reply)
    end = TurnCut.of(SEARCHQA.unwrapped).end(reply)
    assert reply.startswith(action) and action == (reply if end is None else reply[:end])
