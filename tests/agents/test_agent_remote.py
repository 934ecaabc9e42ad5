"""A chat agent playing an env that runs on an env server: two real loopback servers, one episode."""

from __future__ import annotations

import asyncio

from agentgym.agents import ChatAgentConfig, OpenAIChatAgent, function_tools, play_episode
from agentgym.remote import AsyncRemoteEnv, RemoteEnv
from agentgym.server import ServerConfig, create_app
from agentgym.server.live_server import LiveServer


def test_a_chat_agent_plays_a_remote_env_to_a_final_pass(stub, stub_url):
    with LiveServer(create_app(ServerConfig(tokens=("t",)))) as env_server:
        sync_remote = RemoteEnv(env_server.url, "TravelPlanner-v0", env_kwargs={"action_format": "json"}, token="t")
        assert len(function_tools(sync_remote)) == 7
        sync_remote.close()

        async def go():
            async with AsyncRemoteEnv(env_server.url, "TravelPlanner-v0", env_kwargs={"action_format": "json"},
                                      token="t") as env:
                agent = OpenAIChatAgent(ChatAgentConfig(base_url=stub_url, model="stub"), tools=function_tools(env))
                log = await play_episode(env, agent, seed=0, options={"task_index": 3})
                await agent.aclose()
                return log

        log = asyncio.run(go())
    assert log.last_info["report"]["final_pass"] is True
    assert "tools" in stub.requests[0]
