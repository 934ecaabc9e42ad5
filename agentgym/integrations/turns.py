"""The turn rules every trainer plays an agentgym episode by (verl's agent loop, TRL's rollout).

One episode is a token stream: the prompt, then model turns (loss mask 1) and observations
(mask 0). The rules, written once here:

* a turn ends where the env stops reading it (``cut``, the env's declared ``stops.TurnCut``):
  by default at its first complete action outside ``<think>`` blocks, tokens after it cut, and
  a stop string inside ``<think>`` is not an action, so sampling resumes there (at most
  ``max_resumes`` times per turn); an env playing Search-R1 declares Search-R1's cut (its first
  ``</search>``, else its first ``</answer>``, thoughts included: no resuming);
* a turn cut short of the model's own end-of-turn token is closed with that token at mask 0
  (the model did not sample it), so the next message starts a well-formed chat turn (no token
  when ``eos_token_id`` is None: Search-R1's layout has none);
* each turn may use only the response tokens left (``response_length``); a turn that spends the
  budget is not a complete action and ends the episode unplayed;
* the episode ends when the env ends it, at ``max_turns`` model turns, or when an observation
  leaves no room to answer;
* the reward is the env's (its shaper's total with ``reward=``), or a fallback for episodes that
  failed or did not finish (``score_episode``).

A trainer supplies the parts that are its own through ``TurnHost``: sampling tokens, merging them
and an observation into its token stream, and stepping the env (a layout such as
``search_r1_layout`` wraps a host and replaces its merging). No trainer is imported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentgym._deprecated import module_aliases
from agentgym.integrations.reward_info import RolloutResult, extra_info_from, score_of
from agentgym.integrations.stops import TurnCut, tokens_through

__getattr__ = module_aliases(__name__, {"EpisodeResult": "RolloutResult"})

__all__ = ["TokenStream", "TurnHost", "TurnRules", "RolloutResult", "play_episode", "take_turn",
           "TurnCut", "cut_after_action", "close_turn", "score_episode", "episode_summary"]


@dataclass
class TokenStream:
    """One trajectory's tokens: the prompt, then the response with its loss mask and logprobs."""

    messages: list[dict[str, Any]]
    token_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    """1 for tokens the model sampled, 0 for observations and tokens the rules added."""
    logprobs: list[float] = field(default_factory=list)

    @property
    def prompt_length(self) -> int:
        return len(self.token_ids) - len(self.response_mask)

    @property
    def response_ids(self) -> list[int]:
        return self.token_ids[self.prompt_length:]


@dataclass(frozen=True)
class TurnRules:
    """The limits of one episode."""

    response_length: int
    """Response tokens (model turns and observations together) the episode may use."""
    eos_token_id: int | None
    """The end-of-turn token that closes a cut turn (None: cut turns stay open)."""
    cut: TurnCut = TurnCut()
    """Where the env stops reading a turn (``TurnCut.of(env)``); no stop strings: no cutting."""
    max_turns: int | None = None
    """Model turns at most (None: until the env ends the episode or the budget is spent)."""
    max_resumes: int = 8
    """Times sampling resumes after a stop string inside ``<think>``, per turn."""


class TurnHost(Protocol):
    """What a trainer provides: its sampler, its token bookkeeping and its env calls."""

    async def sample(self, stream: Any, params: dict[str, Any], continued: list[int],
                     max_tokens: int) -> tuple[list[int], list[float] | None]:
        """Tokens sampled after ``stream.token_ids + continued``, at most ``max_tokens``."""

    async def merge_assistant(self, stream: Any, tokens: list[int], logprobs: list[float] | None) -> None:
        """Append a model turn to the stream (mask 1)."""

    async def observe(self, stream: Any, observation: str) -> bool:
        """Append an observation (mask 0); False, the stream unchanged, when the response would
        reach ``response_length`` with it (no room left to answer)."""

    async def step(self, stream: Any, env: Any, text: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``env.step(text)``."""

    def decode(self, tokens: Sequence[int]) -> str:
        """Text of tokens, special tokens skipped."""


async def play_episode(host: TurnHost, rules: TurnRules, env: Any, stream: Any, result: RolloutResult,
                       params: dict[str, Any]) -> None:
    """Alternate model turns and env steps until a rule ends the episode; ``result`` says why."""
    while True:
        budget = rules.response_length - len(stream.response_mask)
        if budget <= 0:
            result.stop_reason = "response_length"
            return
        text = await take_turn(host, rules, stream, params, budget)
        result.num_turns += 1
        if len(stream.response_mask) >= rules.response_length:
            result.stop_reason = "response_length"  # the turn was cut: not a complete action
            return
        observation, reward, terminated, truncated, info = await host.step(stream, env, text)
        result.add_step(reward, info, terminated=terminated, truncated=truncated)
        if terminated or truncated:
            result.stop_reason = "terminated" if terminated else "env_truncated"
            return
        if rules.max_turns and result.num_turns >= rules.max_turns:
            result.stop_reason = "max_turns"
            return
        if not await host.observe(stream, observation):
            result.stop_reason = "response_length"
            return


async def take_turn(host: TurnHost, rules: TurnRules, stream: Any, params: dict[str, Any], budget: int) -> str:
    """One model turn, cut after its first action and closed when cut; returns its text."""
    tokens, logprobs = await _sample_turn(host, rules, stream, params, budget)
    tokens, logprobs, cut = cut_after_action(tokens, logprobs, host.decode, rules.cut)
    await host.merge_assistant(stream, tokens, logprobs)
    text = host.decode(tokens)
    if cut or _stopped_on_string(tokens, text, rules):
        close_turn(stream, rules)
    stream.messages.append({"role": "assistant", "content": text})
    return text


async def _sample_turn(host: TurnHost, rules: TurnRules, stream: Any, params: dict[str, Any],
                       budget: int) -> tuple[list[int], list[float] | None]:
    """Sample one turn; resumed when it stopped on a stop string inside a think block."""
    tokens: list[int] = []
    logprobs: list[float] | None = []
    for _ in range(rules.max_resumes + 1):
        new, new_logprobs = await host.sample(stream, params, tokens, budget - len(tokens))
        new = list(new)[: budget - len(tokens)]
        tokens += new
        logprobs = logprobs + list(new_logprobs)[: len(new)] if (logprobs is not None and new_logprobs) else None
        text = host.decode(tokens)
        if not (new and len(tokens) < budget and _stopped_on_string(tokens, text, rules)
                and rules.cut.resumes(text)):
            break
    return tokens, logprobs


def cut_after_action(tokens: list[int], logprobs: list[float] | None, decode: Any,
                     cut: TurnCut) -> tuple[list[int], list[float] | None, bool]:
    """Drop the tokens after the point where the env stops reading the turn; True when cut."""
    if not cut.stops or not tokens:
        return tokens, logprobs, False
    text = decode(tokens)
    end = cut.end(text)
    if end is None or not text[end:].strip():
        return tokens, logprobs, False
    keep = tokens_through(tokens, decode, end)
    return tokens[:keep], (logprobs[:keep] if logprobs is not None else None), keep < len(tokens)


def _stopped_on_string(tokens: list[int], text: str, rules: TurnRules) -> bool:
    return bool(rules.cut.stops) and bool(tokens) and tokens[-1] != rules.eos_token_id \
        and text.rstrip().endswith(rules.cut.stops)


def close_turn(stream: Any, rules: TurnRules) -> None:
    """End a turn the stop string cut short with the end-of-turn token, at mask 0 (not sampled)."""
    eos = rules.eos_token_id
    if not isinstance(eos, int) or len(stream.response_mask) >= rules.response_length:
        return
    stream.token_ids.append(eos)
    stream.response_mask.append(0)
    if stream.logprobs:
        stream.logprobs.append(0.0)


def score_episode(result: RolloutResult, term_names: Sequence[str], *, failure_reward: float = 0.0,
                  unfinished_reward: float = 0.0) -> tuple[float, dict[str, float]]:
    """The reward paid and its fixed-key breakdown (``reward_info``): the env's reward when the
    episode ended, ``failure_reward`` when the env raised, ``unfinished_reward`` otherwise."""
    score = score_of(result, failure_reward=failure_reward, unfinished_reward=unfinished_reward)
    return score, extra_info_from(result, term_names, score)


def episode_summary(result: RolloutResult, env_id: str | None) -> dict[str, Any]:
    """How the episode ended, for logs: env, task, stop reason, error, the env's return."""
    return {"env_id": env_id, "task_id": result.task_id, "stop_reason": result.stop_reason,
            "error": result.error, "env_return": result.env_return,
            "fatal": result.error if result.fatal else None}
