"""The OpenEnv front door: OpenEnv's own server code, played with OpenEnv's own client on loopback.

Each episode is played through OpenEnv and, step for step, through a local env with the same
seed and actions: the observations, rewards, flags and evaluations must be the same.
"""

from __future__ import annotations

import asyncio
import json

import gymnasium
import pytest

pytest.importorskip("openenv.core", reason="the OpenEnv front door needs openenv-core: pip install 'agentgym-rl[openenv]'")

from openenv.core import GenericEnvClient  # noqa: E402
from server_helpers import settings  # noqa: E402

from agentgym.envs.travelplanner.scripted import gold_plan_actions  # noqa: E402
from agentgym.server.openenv_app import AgentgymAction, AgentgymEnvClient, create_openenv_app  # noqa: E402
from agentgym.server.live_server import LiveServer  # noqa: E402


@pytest.fixture(scope="module")
def openenv_server():
    with LiveServer(create_openenv_app(settings(env_ids=("TravelPlanner-v0", "SearchQA-v0")),
                                       "TravelPlanner-v0")) as tp, \
         LiveServer(create_openenv_app(settings(env_ids=("SearchQA-v0",)), "SearchQA-v0")) as qa:
        yield {"TravelPlanner-v0": tp.url, "SearchQA-v0": qa.url}


async def _play(url: str, env_id: str, index: int, actions_for) -> None:
    local = gymnasium.make(env_id, action_format="json")
    expected, _ = local.reset(seed=index, options={"task_index": index})
    async with AgentgymEnvClient(base_url=url) as env:
        result = await env.reset(seed=index, env_kwargs={"action_format": "json"}, options={"task_index": index})
        assert result.observation.text == expected and not result.done
        for action in actions_for(local.unwrapped):
            result = await env.step(AgentgymAction(text=action))
            observation, reward, terminated, truncated, info = local.step(action)
            assert result.observation.text == observation
            assert (result.reward, result.done, result.observation.truncated) == (reward, terminated or truncated,
                                                                                 truncated)
            assert result.observation.info == json.loads(json.dumps(info))
        assert result.done and result.reward == 1.0
        state = await env.state()
        assert state.env_id == env_id and state.step_count == len(actions_for(local.unwrapped))


def test_openenv_client_plays_a_travelplanner_and_a_searchqa_episode(openenv_server):
    def plan(env):
        return gold_plan_actions(env.task, "json")

    def search_then_answer(env):
        question = env.task
        return ['<tool_call>{"name": "search", "arguments": {"query": %s}}</tool_call>' % json.dumps(question.text),
                f"<answer>{question.golden_answers[0]}</answer>"]

    async def main() -> None:
        await asyncio.gather(_play(openenv_server["TravelPlanner-v0"], "TravelPlanner-v0", 4, plan),  # concurrent
                             _play(openenv_server["TravelPlanner-v0"], "TravelPlanner-v0", 5, plan))  # sessions
        await _play(openenv_server["SearchQA-v0"], "SearchQA-v0", 2, search_then_answer)

    asyncio.run(main())


def test_openenv_keeps_the_trust_boundary(openenv_server):
    async def main() -> None:
        async with GenericEnvClient(base_url=openenv_server["SearchQA-v0"]) as env:
            for arguments in ({"env_kwargs": {"retriever": "http://169.254.169.254/"}},
                              {"env_kwargs": {"questions": "/etc/passwd"}},
                              {"options": {"cache_dir": "/tmp"}},
                              {"preset": "not-a-preset"}):
                with pytest.raises(Exception, match="ConfigError|not allowed|expected"):  # noqa: B017
                    await env.reset(**arguments)
            result = await env.reset(seed=0)  # the session serves on after refusals
            assert "Question:" in result.observation["text"]

    asyncio.run(main())
