"""Agents that play agentgym envs: the ``Agent`` protocol, a chat agent for OpenAI-compatible
endpoints, and a replay adapter for scripted agents. See ``docs/agents.md``.

    agent = OpenAIChatAgent(ChatAgentConfig(base_url="http://127.0.0.1:8000/v1", model="my-model"),
                            tools=function_tools(env))
    log = run_episode(env, agent, seed=0)
"""

from agentgym.agents.base import Agent, EpisodeLog, ReplayAgent, function_tools, play_episode, run_episode
from agentgym.agents.openai_chat import ChatAgentConfig, OpenAIChatAgent
from agentgym.agents.reference import travelplanner_reference_agent

__all__ = [
    "Agent", "EpisodeLog", "ReplayAgent", "play_episode", "run_episode", "function_tools",
    "ChatAgentConfig", "OpenAIChatAgent", "travelplanner_reference_agent",
]
