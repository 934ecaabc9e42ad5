"""``environment_factory`` classes: agentgym envs as TRL tool environments.

``GRPOTrainer(environment_factory=SearchTool)`` makes one instance per rollout; TRL exposes its
public methods as tools (their names, type hints and docstrings become the schemas), calls
``reset(**row)`` before each rollout and ``get_reward()`` after it. Each tool call is one env
step in the env's JSON action format, so the env's parsing, limits, errors and reward apply as
in any other agentgym episode.

The row names its task the way ``task_dataset`` writes it (``TASK_KEY`` on a prompt message;
``SearchTool.dataset(...)`` builds such rows with the tools' own env), or by columns ``seed`` and
``options`` (a dict, or JSON text). ``reset`` returns the env's first observation, to be appended
to the prompt, unless the prompt already holds it.

Subclass to change the env's kwargs: ``class MySearch(SearchTool): env_kwargs = {...}; reward = ...``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium

from agentgym.integrations.trl.rollout import TASK_KEY, task_dataset, task_of

__all__ = ["SearchTool", "TravelPlannerTools"]

_OVER = "The episode is over."


class _EnvTools:
    """One agentgym env behind TRL's tool-environment contract (``reset``, tools, ``get_reward``)."""

    env_id: ClassVar[str]
    env_kwargs: ClassVar[dict[str, Any]] = {}
    reward: ClassVar[Any] = None
    """A reward preset or spec: ``get_reward`` pays its total; None pays the env's own reward."""

    def __init__(self) -> None:
        kwargs = self._env_kwargs()
        if self.reward is not None:
            kwargs["reward"] = self.reward
        self.env = gymnasium.make(self.env_id, **kwargs)
        self.total, self.done, self.info = 0.0, False, {}

    @classmethod
    def dataset(cls, *, seeds: Sequence[int] | None = None, options: Sequence[Mapping[str, Any]] | None = None) -> Any:
        """``task_dataset`` for these tools: prompts rendered by the same env (JSON action format)."""
        return task_dataset(cls.env_id, seeds=seeds, options=options, env_kwargs=cls._env_kwargs())

    @classmethod
    def _env_kwargs(cls) -> dict[str, Any]:
        return {**cls.env_kwargs, "action_format": "json"}

    def reset(self, **row: Any) -> str | None:
        task = _row_task(row)
        observation, self.info = self.env.reset(seed=task.get("seed"), options=task.get("options") or None)
        self.total, self.done = 0.0, False
        return None if _prompt_holds(row.get("prompt"), observation) else observation

    def get_reward(self) -> float:
        """The env's reward for the episode so far (the shaped total when ``reward`` is set)."""
        return self.total

    def _act(self, name: str, arguments: Mapping[str, Any]) -> str:
        call = json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)
        return self._step(f"<tool_call>{call}</tool_call>")

    def _step(self, action: str) -> str:
        if self.done:
            return _OVER
        observation, reward, terminated, truncated, self.info = self.env.step(action)
        self.total += float(reward)
        self.done = bool(terminated or truncated)
        return observation


class SearchTool(_EnvTools):
    """SearchQA-v0: search the knowledge base, then answer."""

    env_id = "SearchQA-v0"

    def search(self, query: str) -> str:
        """Search the knowledge base for passages about a query.

        Args:
            query: A few keywords or a question.

        Returns:
            The top passages, one per line.
        """
        return self._act("search", {"query": query})

    def answer(self, answer: str) -> str:
        """Submit the final answer; this ends the episode.

        Args:
            answer: The answer, as short as possible.

        Returns:
            A confirmation.
        """
        return self._step(f"<answer>{answer}</answer>")


class TravelPlannerTools(_EnvTools):
    """TravelPlanner-v0 (tool-use mode): the sandbox's searches, the notebook, and plan submission."""

    env_id = "TravelPlanner-v0"

    def search_flights(self, origin: str, destination: str, date: str) -> str:
        """Flights from one city to another on a date.

        Args:
            origin: Departure city, e.g. New York.
            destination: Destination city.
            date: Departure date as YYYY-MM-DD.
        """
        return self._act("search_flights", {"origin": origin, "destination": destination, "date": date})

    def search_accommodations(self, city: str) -> str:
        """Accommodations in a city.

        Args:
            city: City name.
        """
        return self._act("search_accommodations", {"city": city})

    def search_restaurants(self, city: str) -> str:
        """Restaurants in a city.

        Args:
            city: City name.
        """
        return self._act("search_restaurants", {"city": city})

    def search_attractions(self, city: str) -> str:
        """Attractions in a city.

        Args:
            city: City name.
        """
        return self._act("search_attractions", {"city": city})

    def search_cities(self, state: str) -> str:
        """Cities of a state.

        Args:
            state: State name, e.g. Texas.
        """
        return self._act("search_cities", {"state": state})

    def distance_matrix(self, origin: str, destination: str, mode: str) -> str:
        """Duration, distance and cost of driving between two cities.

        Args:
            origin: Origin city.
            destination: Destination city.
            mode: Travel mode, self-driving or taxi.
        """
        return self._act("distance_matrix", {"origin": origin, "destination": destination, "mode": mode})

    def notebook_write(self, description: str) -> str:
        """Store the last search result in the notebook under a short description.

        Args:
            description: Short description of the stored result.
        """
        return self._act("notebook_write", {"description": description})

    def submit_plan(self, plan: str) -> str:
        """Submit the day-by-day plan as JSON; this ends the episode.

        Args:
            plan: The plan: a JSON list with one object per day.
        """
        return self._step(f"<answer>{plan}</answer>")


def _row_task(row: Mapping[str, Any]) -> dict[str, Any]:
    if "seed" in row or "options" in row:
        options = row.get("options")
        options = json.loads(options) if isinstance(options, str) else dict(options or {})
        return {"seed": row.get("seed"), "options": options}
    return task_of(row.get("prompt"))


def _prompt_holds(prompt: Any, observation: str) -> bool:
    if not isinstance(prompt, list):
        return False
    return any(isinstance(m, Mapping) and m.get(TASK_KEY) and m.get("content") == observation for m in prompt)
