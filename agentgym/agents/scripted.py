"""Scripted agents, which play without a model: ``agentgym run ENV --agent solver|gold|first-listing|top-title|perturbed``.

    env = gymnasium.make("TravelPlanner-v0", action_format="json")
    log = run_episode(env, SolverAgent(env), seed=0)              # the exact solver's plan: an upper bound
    log = run_episode(env, travelplanner_gold_agent(env), seed=0)  # replays the task's annotated plan

``SolverAgent`` and ``travelplanner_gold_agent`` play TravelPlanner's scripted actions
(``agentgym.envs.travelplanner.scripted``); ``FirstListingAgent`` and ``TopTitleAgent`` are
deliberately weak baselines. ``PerturbedAgent`` is a seeded source of groups for the reward lab:
it plays each task's passing answer, or that answer with failure edits and invalid calls (the
env's reward-lab kit, ``TextEnv.reward_lab``). Each factory takes the env (``factory(env) -> Agent``), as
``agentgym run --agent module:factory`` does.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from agentgym.agents.base import ReplayAgent
from agentgym.envs.travelplanner.scripted import give_up, gold_plan_actions, solver_actions
from agentgym.envs.travelplanner.solver import solve
from agentgym.errors import ConfigError, ResetNeeded

__all__ = ["SolverAgent", "FirstListingAgent", "TopTitleAgent", "PerturbedAgent", "solver_agent",
           "first_listing_agent", "top_title_agent", "perturbed_agent", "travelplanner_gold_agent"]

_TITLE = re.compile(r"Doc 1\(Title: (.*?)\)")


class SolverAgent:
    """TravelPlanner's exact solver, played through the env: in tool-use mode the lookups its plan
    needs, then the plan (``solver_actions``), in both modes and both action formats. A task with
    no plan within its budget gets ``GiveUp``."""

    def __init__(self, env: Any, *, time_limit: float | None = 30.0) -> None:
        self.env = env.unwrapped if hasattr(env, "unwrapped") else env
        self.time_limit = time_limit
        self._queue: list[str] = []
        self._task: Any = None

    def reset(self) -> None:
        self._queue, self._task = [], None

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        task = self.env.task
        if task is None:
            raise ResetNeeded("reset the env before asking the solver agent for an action")
        if task is not self._task or (info or {}).get("turn") == 0:
            self._task = task
            self._queue = solver_actions(task, self.env.world, self.env.action_format,
                                         tools=self.env.mode == "tool-use", time_limit=self.time_limit)
        if not self._queue:  # the episode should be over; never leave the env without an action
            return give_up("nothing left to do", self.env.action_format)
        return self._queue.pop(0)


class FirstListingAgent(SolverAgent):
    """A deliberately weak planner: the solver's route and transport, but the first hotel and
    the first restaurant it sees in each city, for every night and every meal.

    It ignores minimum nights, house rules, room types, cuisines, budgets and meal diversity,
    so its failures show up constraint by constraint.
    """

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        action = super().act(observation, info)
        if action.startswith(("Finish[", "<answer>")):
            return self._weak_submission(action)
        return action

    def _weak_submission(self, action: str) -> str:
        result = solve(self.env.task, self.env.world, must_pass="both", time_limit=self.time_limit)
        plan = [self._first_listings(day) for day in result.plan]
        text = json.dumps(plan, ensure_ascii=False)
        return f"Finish[{text}]" if action.startswith("Finish[") else f"<answer>{text}</answer>"

    def _first_listings(self, day: dict[str, Any]) -> dict[str, Any]:
        world, out = self.env.world, dict(day)
        for key, table in (("breakfast", world.restaurants), ("lunch", world.restaurants),
                           ("dinner", world.restaurants), ("accommodation", world.accommodations)):
            value = str(day.get(key, "-"))
            if value in ("", "-") or ", " not in value:
                continue
            city = value.rsplit(", ", 1)[1]
            rows = table(city.split("(")[0])
            if rows:
                out[key] = f"{rows[0].name}, {city}"
        return out


class TopTitleAgent:
    """Searches the question once and answers with the title of the top passage."""

    def __init__(self) -> None:
        self._searched = False

    def reset(self) -> None:
        self._searched = False

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info.get("turn") == 0:
            self._searched = False
        if not self._searched:
            self._searched = True
            return f"<search>{info['extra'].get('question', '')}</search>"
        match = _TITLE.search(observation)
        return f"<answer>{match.group(1) if match else 'unknown'}</answer>"


class PerturbedAgent:
    """A seeded mix of right and wrong: each episode plays its task's passing answer (the env's reward-lab
    kit), unchanged with probability ``pass_rate``, else after 1 to ``max_edits`` failure edits of the
    answer; with probability ``invalid_rate`` it also makes 1 or 2 invalid calls on the way. The episode's
    sample seed (``reset(seed=)``, distinct per episode in ``agentgym run``) decides everything, so a
    rerun plays the same episodes. Scripted trajectories, not a policy's: they show what a spec can
    tell apart, not what a model will write.
    """

    def __init__(self, env: Any, *, pass_rate: float = 0.3, invalid_rate: float = 0.3, max_edits: int = 3,
                 seed: int = 0) -> None:
        for name, value in (("pass_rate", pass_rate), ("invalid_rate", invalid_rate)):
            if not 0.0 <= value <= 1.0:
                raise ConfigError(name, value, "a probability in [0, 1]")
        if max_edits < 1:
            raise ConfigError("max_edits", max_edits, "an int >= 1")
        self.env = _local_env(env, "perturbed")
        self.kit = type(self.env).reward_lab_kit()
        self.pass_rate, self.invalid_rate, self.max_edits = pass_rate, invalid_rate, max_edits
        self._seed = seed
        self._rng = random.Random(seed)
        self._queue: list[str] | None = None

    def reset(self, seed: int | None = None) -> None:
        self._rng = random.Random(self._seed if seed is None else seed)
        self._queue = None

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        if self._queue is None or (info or {}).get("turn") == 0:
            self._queue = self._episode()
        return self._queue.pop(0) if self._queue else "GiveUp[nothing left to do]"

    def _episode(self) -> list[str]:
        env, rng = self.env, self._rng
        actions = self.kit.passing_actions(env)
        if not actions:
            raise ConfigError("task", getattr(env.task, "id", None), "a task with a passing answer to perturb")
        if rng.random() >= self.pass_rate:
            for _ in range(rng.randint(1, self.max_edits)):
                actions = self.kit.failure_edit(env, actions, rng)
        if rng.random() < self.invalid_rate:
            room = max(0, getattr(env, "max_turns", len(actions) + 2) - len(actions))
            for _ in range(min(room, rng.randint(1, 2))):
                actions.insert(rng.randrange(len(actions)), self.kit.invalid_action(env, rng))
        return actions


def solver_agent(env: Any) -> SolverAgent:
    """The exact solver's plan, after the lookups it needs: an upper bound (needs a local env)."""
    return SolverAgent(_local_travelplanner(env, "solver"))


def first_listing_agent(env: Any) -> FirstListingAgent:
    """The weak TravelPlanner baseline (needs a local env)."""
    return FirstListingAgent(_local_travelplanner(env, "first-listing"))


def top_title_agent(env: Any) -> TopTitleAgent:
    """The search-QA heuristic: one search, answer with the top passage's title."""
    return TopTitleAgent()


def perturbed_agent(env: Any) -> PerturbedAgent:
    """The reward lab's seeded source of groups (needs a local env that declares a reward-lab kit)."""
    return PerturbedAgent(env)


def travelplanner_gold_agent(env: Any) -> ReplayAgent:
    """Replays each episode's gold (annotated) plan: the lookups it needs, then the plan itself.

    ``env`` must be a local TravelPlanner env: the agent reads the episode's task from it, after
    each reset, which is where the runner and ``play_episode`` call ``agent.reset()``.
    """
    unwrapped = _local_travelplanner(env, "gold")

    def script(observation: str, info: dict[str, Any]) -> list[str]:
        return gold_plan_actions(unwrapped.task, unwrapped.action_format, tools=unwrapped.mode == "tool-use")

    return ReplayAgent(script, fallback="GiveUp[the gold plan is exhausted]")


def _local_env(env: Any, agent: str, kind: type | None = None, name: str = "agentgym") -> Any:
    """The local env an agent reads its episode's task from (``kind``, by default any ``TextEnv``)."""
    from agentgym.core.env import TextEnv

    unwrapped = getattr(env, "unwrapped", None)
    if not isinstance(unwrapped, kind or TextEnv):
        raise ConfigError("agent", agent, f"an agent for a local {name} env (the {agent} agent reads the "
                          "episode's task from it)")
    return unwrapped


def _local_travelplanner(env: Any, agent: str) -> Any:
    from agentgym.envs.travelplanner.env import TravelPlannerEnv

    return _local_env(env, agent, TravelPlannerEnv, "TravelPlanner-v0")
