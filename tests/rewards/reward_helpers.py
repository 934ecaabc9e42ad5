"""Helpers shared by the reward tests: scripted episodes and specs of scripted terms."""

from __future__ import annotations

from agentgym import StepInfo
from agentgym.rewards import Episode

SCRIPTED = "reward_fixture_terms:scripted"


def scripted_term(name, weight, **fields):
    """A custom term whose raw value is ``task[name]`` in the episode."""
    return {"kind": "custom", "function": SCRIPTED, "name": name, "weight": weight, **fields}


def scripted_episode(values, *, outcome=0.0, answer="an answer", actions=None, prompt=None):
    """A one-step episode that answered ``answer``, with the scripted raw values in its task."""
    step = StepInfo(turn=1, action="answer", terminated_reason="answer")
    return Episode([step], actions=actions or [f"<answer>{answer}</answer>"], task=dict(values),
                   answer=answer, outcome=outcome, prompt=prompt)
