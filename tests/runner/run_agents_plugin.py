"""Agent factories for `agentgym run --agent run_agents_plugin:NAME` in the run tests."""

from __future__ import annotations

from agentgym.agents import ReplayAgent


def give_up(env) -> ReplayAgent:
    return ReplayAgent(["GiveUp[not today]"])
