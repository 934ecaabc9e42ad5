"""TextEnv: the base class of agentgym's multi-turn text environments.

A subclass implements two hooks, ``_start(options) -> (observation, StepInfo)`` and
``_act(action) -> (observation, reward, terminated, StepInfo)``. The base class owns the
Gymnasium contract around them: seeding, the text spaces, turn counting, truncation at
``max_turns``, and turning ``StepInfo`` into the plain ``info`` dict.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium

from agentgym.core.spaces import TextSpace
from agentgym.core.types import StepInfo
from agentgym.errors import ActionTypeError, ConfigError, ResetNeeded

__all__ = ["TextEnv"]


class TextEnv(gymnasium.Env[str, str]):
    """A Gymnasium env whose observations and actions are text."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}

    def __init__(
        self,
        *,
        max_turns: int = 30,
        max_action_chars: int = 1_000_000,
        max_observation_chars: int = 10_000_000,
        render_mode: str | None = None,
    ) -> None:
        _require_positive_int("max_turns", max_turns)
        _require_positive_int("max_action_chars", max_action_chars)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ConfigError("render_mode", render_mode, [None, *self.metadata["render_modes"]])
        self.max_turns = max_turns
        self.render_mode = render_mode
        self.action_space = TextSpace(max_action_chars)
        self.observation_space = TextSpace(max_observation_chars)
        self._turn = 0
        self._done = True
        self._last_observation = ""

    # -- Gymnasium API -----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._turn = 0
        self._done = False
        observation, info = self._start(dict(options or {}))
        self._last_observation = observation
        return observation, info.to_info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise ActionTypeError(f"step() takes the model's text as a str, got {type(action).__name__}")
        if self._done:
            raise ResetNeeded("the episode is over (or never started); call reset() first")
        self._turn += 1
        observation, reward, terminated, info = self._act(action)
        truncated = not terminated and self._turn >= self.max_turns
        if truncated:
            info = info.model_copy(update={"terminated_reason": "max_turns"})
        self._done = terminated or truncated
        self._last_observation = observation
        return observation, float(reward), terminated, truncated, info.to_info()

    def render(self) -> str | None:
        return self._last_observation if self.render_mode == "ansi" else None

    @property
    def turn(self) -> int:
        """Actions taken so far in the current episode."""
        return self._turn

    # -- hooks for subclasses ----------------------------------------------------------------
    def _start(self, options: dict[str, Any]) -> tuple[str, StepInfo]:
        raise NotImplementedError

    def _act(self, action: str) -> tuple[str, float, bool, StepInfo]:
        raise NotImplementedError


def _require_positive_int(field: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(field, value, "a positive int")
