"""Search-R1's token layout for the agent loop (``agentgym.layout: search-r1``).

Search-R1's generation loop keeps one continuous response per trajectory: each model turn is
decoded without special tokens, cut after its first ``</search>`` (else its first ``</answer>``)
and tokenized again; each observation's tokens are appended as they are, cut to
``max_obs_length`` (500), with no chat turn around them and no end-of-turn token anywhere. A
Search-R1 checkpoint trained on that layout sees the same tokens here. The turns are cut by the
env's declared rule (``stops.TurnCut``), so only an env playing ``protocol="search-r1"`` fits.
"""

from __future__ import annotations

from typing import Any

from agentgym.errors import ConfigError
from agentgym.integrations.verl.stops import TurnCut

SEARCH_R1_CUT = ("</search>", "</answer>")

__all__ = ["check_env", "generate", "observe"]


def check_env(env: Any) -> None:
    """A ``ConfigError`` unless the env declares Search-R1's turn cut (``protocol="search-r1"``,
    in process or on an env server)."""
    cut = TurnCut.of(env)
    if cut.priority != SEARCH_R1_CUT or not cut.in_thoughts:
        inner = getattr(env, "unwrapped", env)
        raise ConfigError("agentgym.layout", "search-r1", "an env playing protocol='search-r1' (this one plays "
                          f"{getattr(inner, 'protocol', type(inner).__name__)!r}); or use layout: chat")


async def generate(loop: Any, rollout: Any, sampling_params: dict[str, Any], budget: int) -> str:
    """One model turn, kept as Search-R1 keeps it: decoded, cut, tokenized again (loss mask 1)."""
    tokens, _ = await loop._sample_turn(rollout, sampling_params, budget)
    text = loop._decode(tokens)
    end = loop.cut.end(text)
    kept = text if end is None else text[:end]
    ids = list(loop.tokenizer.encode(kept, add_special_tokens=False))[:budget]
    rollout.token_ids += ids
    rollout.response_mask += [1] * len(ids)
    rollout.messages.append({"role": "assistant", "content": kept})
    return kept


async def observe(loop: Any, rollout: Any, observation: str) -> bool:
    """The observation's own tokens, cut to ``max_observation_tokens`` (loss mask 0); False when
    they leave no room in the response."""
    ids = list(loop.tokenizer.encode(observation, add_special_tokens=False))[:loop.settings.max_observation_tokens]
    if len(rollout.response_mask) + len(ids) >= loop.response_length:
        return False
    rollout.token_ids += ids
    rollout.response_mask += [0] * len(ids)
    rollout.messages.append({"role": loop.settings.observation_role, "content": observation})
    return True
