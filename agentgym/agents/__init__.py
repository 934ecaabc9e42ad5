"""Agents that play agentgym envs: the ``Agent`` interface, a chat agent for OpenAI-compatible
endpoints, a replay adapter, and the scripted agents (solver, gold, weak baselines). See ``docs/agents.md``.

    agent = OpenAIChatAgent(ChatAgentConfig(base_url="http://127.0.0.1:8000/v1", model="my-model"),
                            tools=function_tools(env))
    log = run_episode(env, agent, seed=0)
"""


from agentgym._deprecated import module_aliases as _module_aliases
from agentgym._lazy import lazy_names as _lazy_names

# Names load on first use: the reward judge imports chat_client alone, without the agents.
_LAZY = {
    **dict.fromkeys(("Agent", "EpisodeLog", "ReplayAgent", "play_episode", "run_episode", "function_tools"),
                    "agentgym.agents.base"),
    **dict.fromkeys(("ChatAgentConfig", "OpenAIChatAgent"), "agentgym.agents.openai_chat"),
    **dict.fromkeys(("SolverAgent", "FirstListingAgent", "TopTitleAgent", "PerturbedAgent", "travelplanner_gold_agent"),
                    "agentgym.agents.scripted"),
}


__all__ = list(_LAZY)
_lazy_getattr, __dir__ = _lazy_names(__name__, _LAZY, __all__)
__getattr__ = _module_aliases(__name__, {"travelplanner_reference_agent": "travelplanner_gold_agent"}, _lazy_getattr)
