"""Search-R1's token layout (verl: ``agentgym.layout: search-r1``; TRL: ``layout="search-r1"``).

Search-R1's generation loop keeps one continuous response per trajectory: each model turn is
decoded without special tokens, cut after its first ``</search>`` (else its first ``</answer>``)
and tokenized again; each observation's tokens are appended as they are, cut to
``max_obs_length`` (500), with no chat turn around them and no end-of-turn token anywhere. A
Search-R1 checkpoint trained on that layout sees the same tokens here.

``SearchR1Layout`` is a ``turns.TurnLayout``: sampling and env steps stay the trainer's, the turn
rules stay the engine's (``turns``: the env's declared cut, budgets, turn limits); only how a
sampled turn and an observation become tokens changes. The turns are cut by
the env's declared rule, so only an env playing ``action_format="search-r1"`` fits (``check_env``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agentgym.core.turn_cut import TurnCut
from agentgym.errors import ConfigError
from agentgym.integrations.turns import TurnRules

SEARCH_R1_CUT = ("</search>", "</answer>")

__all__ = ["SearchR1Layout", "check_env"]


def check_env(env: Any) -> None:
    """A ``ConfigError`` unless the env declares Search-R1's turn cut (``action_format="search-r1"``,
    in process or on an env server)."""
    cut = TurnCut.of(env)
    if cut.priority != SEARCH_R1_CUT or not cut.in_thoughts:
        inner = getattr(env, "unwrapped", env)
        raise ConfigError("layout", "search-r1", "an env playing action_format='search-r1' (this one plays "
                          f"{getattr(inner, 'action_format', type(inner).__name__)!r}); or use layout 'chat'")


class SearchR1Layout:
    """A ``TurnLayout`` that lays turns out as Search-R1 does (module docstring)."""

    def __init__(self, tokenizer: Any, cut: TurnCut, *, max_observation_tokens: int = 500,
                 observation_role: str = "user") -> None:
        self.tokenizer, self.cut = tokenizer, cut
        self.max_observation_tokens, self.observation_role = max_observation_tokens, observation_role

    def rules(self, rules: TurnRules) -> TurnRules:
        """The episode's rules under this layout: no end-of-turn token closes a cut turn."""
        return replace(rules, end_of_turn=None, cut=self.cut)

    def model_ids(self, tokens: list[int], logprobs: Any, text: str) -> tuple[list[int], None]:
        """The turn as Search-R1 keeps it: decoded, cut, tokenized again (mask 1, no log-probs:
        the re-tokenized turn has none, the trainer recomputes them)."""
        end = self.cut.end(text)
        return self._encode(text if end is None else text[:end]), None

    def observation_ids(self, observation: str) -> list[int]:
        """The observation's own tokens, cut to ``max_observation_tokens``."""
        return self._encode(observation)[:self.max_observation_tokens]

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))
