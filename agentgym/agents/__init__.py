"""Agents that play agentgym envs: the ``Agent`` protocol, a chat agent for OpenAI-compatible
endpoints, and a replay adapter for scripted agents. See ``docs/agents.md``.

    agent = OpenAIChatAgent(ChatAgentConfig(base_url="http://127.0.0.1:8000/v1", model="my-model"),
                            tools=function_tools(env))
    log = run_episode(env, agent, seed=0)
"""


from agentgym._lazy import lazy_names as _lazy_names

# Names load on first use: the reward judge imports chat_client alone, without the agents.
_LAZY = {
    **dict.fromkeys(("Agent", "EpisodeLog", "ReplayAgent", "play_episode", "run_episode", "function_tools"),
                    "agentgym.agents.base"),
    **dict.fromkeys(("ChatAgentConfig", "OpenAIChatAgent"), "agentgym.agents.openai_chat"),
    "travelplanner_reference_agent": "agentgym.agents.reference",
}


__all__ = list(_LAZY)
__getattr__, __dir__ = _lazy_names(__name__, _LAZY, __all__)
