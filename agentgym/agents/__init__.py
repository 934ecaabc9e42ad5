"""Agents that play agentgym envs: the ``Agent`` protocol, a chat agent for OpenAI-compatible
endpoints, and a replay adapter for scripted agents. See ``docs/agents.md``.

    agent = OpenAIChatAgent(ChatAgentConfig(base_url="http://127.0.0.1:8000/v1", model="my-model"),
                            tools=function_tools(env))
    log = run_episode(env, agent, seed=0)
"""


from importlib import import_module as _import_module

# Names load on first use: the reward judge imports chat_client alone, without the agents.
_LAZY = {
    **dict.fromkeys(("Agent", "EpisodeLog", "ReplayAgent", "play_episode", "run_episode", "function_tools"),
                    "agentgym.agents.base"),
    **dict.fromkeys(("ChatAgentConfig", "OpenAIChatAgent"), "agentgym.agents.openai_chat"),
    "travelplanner_reference_agent": "agentgym.agents.reference",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'agentgym.agents' has no attribute {name!r}")


__all__ = list(_LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)
