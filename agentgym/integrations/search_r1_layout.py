"""Search-R1's token layout (verl: ``agentgym.layout: search-r1``; TRL: ``layout="search-r1"``).

Search-R1's generation loop keeps one continuous response per trajectory: each model turn is
decoded without special tokens, cut after its first ``</search>`` (else its first ``</answer>``)
and tokenized again; each observation's tokens are appended as they are, cut to
``max_obs_length`` (500), with no chat turn around them and no end-of-turn token anywhere. A
Search-R1 checkpoint trained on that layout sees the same tokens here.

``SearchR1Layout`` wraps a trainer's ``turns.TurnHost``: sampling and env steps stay the
trainer's, the turn rules stay the engine's (``turns``: the env's declared cut, budgets, turn
limits); only how a sampled turn and an observation become tokens changes. The turns are cut by
the env's declared rule, so only an env playing ``protocol="search-r1"`` fits (``check_env``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agentgym.errors import ConfigError
from agentgym.integrations.stops import TurnCut
from agentgym.integrations.turns import TurnRules

SEARCH_R1_CUT = ("</search>", "</answer>")

__all__ = ["SearchR1Layout", "check_env"]


def check_env(env: Any) -> None:
    """A ``ConfigError`` unless the env declares Search-R1's turn cut (``protocol="search-r1"``,
    in process or on an env server)."""
    cut = TurnCut.of(env)
    if cut.priority != SEARCH_R1_CUT or not cut.in_thoughts:
        inner = getattr(env, "unwrapped", env)
        raise ConfigError("layout", "search-r1", "an env playing protocol='search-r1' (this one plays "
                          f"{getattr(inner, 'protocol', type(inner).__name__)!r}); or use layout 'chat'")


class SearchR1Layout:
    """A ``TurnHost`` that lays turns out as Search-R1 does, over another host's sampling and env."""

    def __init__(self, host: Any, tokenizer: Any, rules: TurnRules, *, max_observation_tokens: int = 500,
                 observation_role: str = "user") -> None:
        self.host, self.tokenizer = host, tokenizer
        self.max_observation_tokens, self.observation_role = max_observation_tokens, observation_role
        self.rules = replace(rules, eos_token_id=None)
        """The episode's rules to play by under this layout: no end-of-turn token closes a cut turn."""

    async def sample(self, stream: Any, params: dict[str, Any], continued: list[int],
                     max_tokens: int) -> tuple[list[int], list[float] | None]:
        return await self.host.sample(stream, params, continued, max_tokens)

    async def step(self, stream: Any, env: Any, text: str) -> Any:
        return await self.host.step(stream, env, text)

    def decode(self, tokens: Sequence[int]) -> str:
        return self.host.decode(tokens)

    async def merge_assistant(self, stream: Any, tokens: list[int], logprobs: Any) -> None:
        """The turn as Search-R1 keeps it: decoded, cut, tokenized again (mask 1, no log-probs:
        the re-tokenized turn has none, the trainer recomputes them)."""
        text = self.decode(tokens)
        end = self.rules.cut.end(text)
        kept = text if end is None else text[:end]
        room = self.rules.response_length - len(stream.response_mask)
        ids = self._encode(kept)[:max(room, 0)]
        stream.token_ids += ids
        stream.response_mask += [1] * len(ids)

    async def observe(self, stream: Any, observation: str) -> bool:
        """The observation's own tokens, cut to ``max_observation_tokens`` (mask 0); False, the
        stream unchanged, when they leave no room in the response."""
        ids = self._encode(observation)[:self.max_observation_tokens]
        if len(stream.response_mask) + len(ids) >= self.rules.response_length:
            return False
        stream.token_ids += ids
        stream.response_mask += [0] * len(ids)
        stream.messages.append({"role": self.observation_role, "content": observation})
        return True

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))
