"""Scripted episodes with a known reward, for the message-level bridges' tests (verifiers, tinker, skyrl).

Each script maps an env's first observation (agentgym's own prompt) to the replies a policy gives:
SearchQA's gold answer (with text after the action, which the bridges must cut), TravelPlanner's
gold plan with the lookups it needs. ``direct_total`` plays the same replies straight through
gymnasium: the reward each bridge must report.
"""

from __future__ import annotations

import socket
from typing import Any

import gymnasium

import agentgym  # noqa: F401 - registers the envs
from agentgym.envs.travelplanner.scripted import gold_plan_actions

REWARDS = {"SearchQA-v0": "prs/short", "TravelPlanner-v0": "planner_r1/dense"}
AFTER_ACTION = " <information>an observation the model invented</information>"


def scripts(env_id: str, count: int, *, seed: int = 0, **env_kwargs: Any) -> dict[str, list[str]]:
    """First observation -> replies, for the first ``count`` tasks (reset with ``seed``, ``task_index``)."""
    env = gymnasium.make(env_id, **env_kwargs)
    out: dict[str, list[str]] = {}
    for index in range(count):
        observation, _ = env.reset(seed=seed, options={"task_index": index})
        task = env.unwrapped.task
        if env_id == "SearchQA-v0":
            out[observation] = [f"<think>I know this.</think><answer>{task.golden_answers[0]}</answer>{AFTER_ACTION}"]
        else:
            out[observation] = gold_plan_actions(task, env.unwrapped.action_format,
                                                 tools=env.unwrapped.mode == "tool-use")
    env.close()
    return out


def direct_total(env_id: str, replies: list[str], *, seed: int, index: int, **env_kwargs: Any) -> tuple[float, dict]:
    """The reward spec's total and terms of ``replies`` played straight through gymnasium (the stop
    strings' cut applied as the env declares it)."""
    from agentgym.core.turn_cut import TurnCut

    env = gymnasium.make(env_id, reward=REWARDS[env_id], **env_kwargs)
    env.reset(seed=seed, options={"task_index": index})
    cut = TurnCut.of(env)
    for reply in replies:
        end = cut.end(reply) if cut.stops else None
        _, reward, terminated, truncated, info = env.step(reply if end is None else reply[:end])
        if terminated or truncated:
            break
    env.close()
    return reward, {name: term["raw"] for name, term in info["reward"]["terms"].items()}


def dead_retriever() -> str:
    """A /retrieve URL on loopback where nothing listens: every search fails (retriever_unreachable)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/retrieve"


def replying(table: dict[str, list[str]], first_user: str, turn: int, fallback: str = "GiveUp[no script]") -> str:
    script = table.get(first_user, ())
    return script[turn] if turn < len(script) else fallback
