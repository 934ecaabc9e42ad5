"""The turn rules every trainer plays an agentgym episode by (verl's agent loop, TRL's rollout).

One episode is a token stream: the prompt, then model turns (loss mask 1) and observations
(mask 0). The rules, written once here:

* a turn ends where the env stops reading it (``cut``, the env's declared ``TextEnv.turn_cut``):
  by default at its first complete action outside ``<think>`` blocks, tokens after it cut, and
  a stop string inside ``<think>`` is not an action, so sampling resumes there (at most
  ``max_resumes`` times per turn); an env playing Search-R1 declares Search-R1's cut (its first
  ``</search>``, else its first ``</answer>``, thoughts included: no resuming);
* a turn the model did not end with an end-of-turn token (it stopped at a stop string, or was
  cut) is closed with the template's end-of-turn token at mask 0 when an observation follows it,
  so the next message starts a well-formed chat turn; the episode's last turn stays as sampled,
  so the stream ends on a token the model produced and a trainer that pays the reward on the last
  token (verl) pays it on a trained one, whatever its estimator;
* each turn may use only the response tokens left (``response_length``); a turn that spends the
  budget is not a complete action and ends the episode unplayed;
* the episode ends when the env ends it, at ``max_turns`` model turns, after ``max_observations``
  observations (verl's ``max_user_turns``), or when an observation leaves no room to answer;
* the reward is the env's (its shaper's total with ``reward=``); an episode that failed for a
  reason outside the model carries a typed failure instead (``RolloutResult.failure``).

How a sampled turn and an observation become tokens is the ``layout``'s (``chat_layout.ChatLayout``,
the template's own tokens; ``search_r1_layout.SearchR1Layout``, Search-R1's); sampling and env
steps are the trainer's ``TurnHost``. No trainer is imported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentgym._deprecated import module_aliases
from agentgym.core.turn_cut import TurnCut
from agentgym.integrations.reward_info import RolloutResult, extra_info_from, score_of
from agentgym.integrations.stops import tokens_through

__getattr__ = module_aliases(__name__, {"EpisodeResult": "RolloutResult", "play_episode": "play_turns"})

__all__ = ["TokenStream", "TurnHost", "TurnLayout", "TurnRules", "RolloutResult", "play_turns", "take_turn",
           "TurnCut", "cut_after_action", "observe", "score_episode", "episode_summary"]


@dataclass
class TokenStream:
    """One rollout's tokens: the prompt, then the response with its loss mask and log-probs."""

    messages: list[dict[str, Any]]
    token_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    """1 for tokens the model sampled, 0 for observations and tokens the rules added."""
    logprobs: list[float | None] = field(default_factory=list)
    """The sampling log-prob of each response token: None where the sampler gave none, 0.0 at mask 0."""
    open_turn: bool = False
    """The last model turn did not end with an end-of-turn token (it is closed before an observation)."""

    @property
    def prompt_length(self) -> int:
        return len(self.token_ids) - len(self.response_mask)

    @property
    def response_ids(self) -> list[int]:
        return self.token_ids[self.prompt_length:]

    def add_model(self, tokens: Sequence[int], logprobs: Sequence[float | None] | None) -> None:
        """Append tokens the model sampled (mask 1)."""
        self.token_ids += tokens
        self.response_mask += [1] * len(tokens)
        self.logprobs += list(logprobs)[:len(tokens)] if logprobs is not None else [None] * len(tokens)
        self.logprobs += [None] * (len(self.response_mask) - len(self.logprobs))

    def add_context(self, tokens: Sequence[int]) -> None:
        """Append tokens the model did not sample (mask 0): observations, an added end-of-turn token."""
        self.token_ids += tokens
        self.response_mask += [0] * len(tokens)
        self.logprobs += [0.0] * len(tokens)

    def sampled_logprobs(self) -> list[float] | None:
        """The log-probs when every sampled token has one (verl's ``response_logprobs``), else None."""
        if any(lp is None for lp in self.logprobs):
            return None
        return [float(lp) for lp in self.logprobs]  # type: ignore[arg-type]


@dataclass(frozen=True)
class TurnRules:
    """The limits of one episode."""

    response_length: int
    """Response tokens (model turns and observations together) the episode may use."""
    stop_ids: tuple[int, ...] = ()
    """The tokens that end a model turn (every end-of-turn id of the model)."""
    end_of_turn: int | None = None
    """The token that closes a turn cut short, before an observation (None: cut turns stay open)."""
    cut: TurnCut = TurnCut()
    """Where the env stops reading a turn (``TurnCut.of(env)``); no stop strings: no cutting."""
    max_turns: int | None = None
    """Model turns at most (None: until the env ends the episode or the budget is spent)."""
    max_observations: int | None = None
    """Observations at most; the episode ends after the model's turn that would get one more
    (verl's ``multi_turn.max_user_turns``; None: no limit)."""
    max_resumes: int = 8
    """Times sampling resumes after a stop string inside ``<think>``, per turn."""


class TurnHost(Protocol):
    """What a trainer provides: its sampler and its env calls."""

    async def sample(self, stream: Any, params: dict[str, Any], continued: list[int], max_tokens: int,
                     stops: tuple[str, ...]) -> tuple[list[int], list[float] | None]:
        """Tokens sampled after ``stream.token_ids + continued``, at most ``max_tokens``, ending at an
        end-of-turn token or one of ``stops`` (kept in the output), and their log-probs."""

    async def step(self, stream: Any, env: Any, text: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``env.step(text)``."""

    def decode(self, tokens: Sequence[int]) -> str:
        """Text of tokens, special tokens skipped."""


class TurnLayout(Protocol):
    """How a sampled turn and an observation become tokens."""

    def model_ids(self, tokens: list[int], logprobs: list[float] | None,
                  text: str) -> tuple[list[int], list[float] | None]:
        """The tokens kept for a sampled turn (``text``: what the env reads of it)."""

    def observation_ids(self, observation: str) -> list[int]:
        """The tokens of an observation, after the turn it answers."""


async def play_turns(host: TurnHost, layout: TurnLayout, rules: TurnRules, env: Any, stream: TokenStream,
                     result: RolloutResult, params: dict[str, Any]) -> None:
    """Alternate model turns and env steps until a rule ends the episode; ``result`` says why."""
    while True:
        budget = rules.response_length - len(stream.response_mask)
        if budget <= 0:
            result.stop_reason = "response_length"
            return
        text = await take_turn(host, layout, rules, stream, params, budget)
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
        if rules.max_observations is not None and result.observations >= rules.max_observations:
            result.stop_reason = "max_observations"
            return
        if not observe(layout, rules, stream, observation):
            result.stop_reason = "response_length"
            return
        result.observations += 1


async def take_turn(host: TurnHost, layout: TurnLayout, rules: TurnRules, stream: TokenStream,
                    params: dict[str, Any], budget: int) -> str:
    """One model turn, cut after its first action; returns the text the env reads."""
    tokens, logprobs = await _sample_turn(host, rules, stream, params, budget)
    tokens, logprobs, cut = cut_after_action(tokens, logprobs, host.decode, rules.cut)
    text = host.decode(tokens)
    ids, logprobs = layout.model_ids(tokens, logprobs, text)
    room = rules.response_length - len(stream.response_mask)
    stream.add_model(ids[:max(room, 0)], logprobs)
    stream.open_turn = cut or not (ids and ids[-1] in rules.stop_ids)
    stream.messages.append({"role": "assistant", "content": text})
    return text


def observe(layout: TurnLayout, rules: TurnRules, stream: TokenStream, observation: str) -> bool:
    """Close the open turn and append the observation (mask 0); False, the stream unchanged, when
    they would leave no room to answer."""
    closing = [rules.end_of_turn] if stream.open_turn and isinstance(rules.end_of_turn, int) else []
    ids = closing + layout.observation_ids(observation)
    if len(stream.response_mask) + len(ids) >= rules.response_length:
        return False
    stream.add_context(ids)
    stream.open_turn = False
    stream.messages.append({"role": getattr(layout, "observation_role", "user"), "content": observation})
    return True


async def _sample_turn(host: TurnHost, rules: TurnRules, stream: TokenStream, params: dict[str, Any],
                       budget: int) -> tuple[list[int], list[float | None]]:
    """Sample one turn; resumed when it stopped on a stop string inside a think block."""
    tokens: list[int] = []
    logprobs: list[float | None] = []
    for _ in range(rules.max_resumes + 1):
        new, new_logprobs = await host.sample(stream, params, tokens, budget - len(tokens), rules.cut.stops)
        new = list(new)[: budget - len(tokens)]
        tokens += new
        logprobs += _aligned(new_logprobs, len(new))
        text = host.decode(tokens)
        if not (new and len(tokens) < budget and _stopped_on_string(tokens, text, rules)
                and rules.cut.resumes(text)):
            break
    return tokens, logprobs


def _aligned(logprobs: Sequence[float | None] | None, count: int) -> list[float | None]:
    values = list(logprobs or ())[:count]
    return values + [None] * (count - len(values))


def cut_after_action(tokens: list[int], logprobs: list[Any] | None, decode: Any,
                     cut: TurnCut) -> tuple[list[int], list[Any] | None, bool]:
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
    return bool(rules.cut.stops) and bool(tokens) and tokens[-1] not in rules.stop_ids \
        and text.rstrip().endswith(rules.cut.stops)


def score_episode(result: RolloutResult, term_names: Sequence[str], *, failure_reward: float = 0.0,
                  unfinished_reward: float = 0.0) -> tuple[float, dict[str, float]]:
    """The reward paid and its fixed-key breakdown (``reward_info``): the env's reward when the
    episode ended, ``failure_reward`` when it failed, ``unfinished_reward`` otherwise."""
    score = score_of(result, failure_reward=failure_reward, unfinished_reward=unfinished_reward)
    return score, extra_info_from(result, term_names, score)


def episode_summary(result: RolloutResult, env_id: str | None) -> dict[str, Any]:
    """How the episode ended, for logs: env, task, stop reason, error, failure, the env's return."""
    return {"env_id": env_id, "task_id": result.task_id, "stop_reason": result.stop_reason,
            "error": result.error, "env_return": result.env_return,
            "failure": result.failure.reason.value if result.failure is not None else None,
            "fatal": result.error if result.fatal else None}
