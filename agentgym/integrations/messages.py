"""One agentgym episode at the message level: the model's reply text in, the env's observation text out.

The trainers that talk to an env in messages (verifiers, tinker-cookbook, skyrl-gym) each wrap this
one driver (``MessageEpisode``); it imports none of them::

    episode = MessageEpisode("SearchQA-v0", reward="prs/short")
    prompt = episode.reset(Start(seed=3, options={"task_index": 7}))  # the env's own first observation
    while not episode.done:
        observation = episode.step(model(prompt_so_far, stop=episode.stops))
    end = episode.end()   # total, outcome, per-term values, failure, fixed-key metrics

The rules, the same as under verl and TRL (``turns``):

* a group's members start from one ``Start`` (seed and reset options), so they see the same task;
* the prompt is the env's first observation as the env writes it (no JSON wrapping);
* each reply is cut at the env's first complete action (``stops.TurnCut``: stop strings outside
  ``<think>``, or the env's own rule); ``stops`` are for the target's sampling params;
* the reward is the reward spec's total (the env's return without one) and its per-term breakdown
  (``RewardBreakdown.from_info``);
* what fails outside the model is a typed ``Failure`` (an env that raised, ``info["failure"]`` on
  a step, a term that abstained for a failure): the episode ends there and ``end().failure`` says
  why, so the adapter can put it in its target's failure slot instead of paying a 0. The user's
  own mistakes (``ConfigError``, ``DataError``, a missing extra) raise.

Env calls block; ``areset``/``astep`` run them on the env thread pool (``agentgym._env_threads``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium

from agentgym._env_threads import run_in_env_thread
from agentgym.core.types import Failure
from agentgym.errors import ActionTypeError, ConfigError, DataError, DependencyNotInstalled, ResetNeeded
from agentgym.integrations.reward_info import RolloutResult, extra_info_from, score_of, term_names_for
from agentgym.integrations.stops import TurnCut

__all__ = ["Start", "EpisodeEnd", "MessageEpisode"]

# The caller's mistakes: raised, never turned into an episode failure.
_USER_ERRORS = (ConfigError, DataError, DependencyNotInstalled, ImportError, ActionTypeError, ResetNeeded)


@dataclass(frozen=True)
class Start:
    """Where an episode starts: the reset seed and options. Every member of a group gets the same one."""

    seed: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Start | Mapping[str, Any] | None) -> Start:
        """A ``Start`` from itself, ``{"seed": ..., "options": {...}}`` (TRL's task rows) or None."""
        if isinstance(value, Start):
            return value
        if value is None:
            return cls()
        if not isinstance(value, Mapping) or set(value) - {"seed", "options"}:
            raise ConfigError("start", value, "a Start or a mapping with 'seed' and/or 'options'")
        seed, options = value.get("seed"), value.get("options") or {}
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ConfigError("start.seed", seed, "an int or None")
        if not isinstance(options, Mapping):
            raise ConfigError("start.options", options, "a mapping of reset options, e.g. {'task_index': 3}")
        return cls(seed, dict(options))

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "options": dict(self.options)}


@dataclass(frozen=True)
class EpisodeEnd:
    """What an episode came to."""

    total: float
    """The reward paid: the spec's total (the env's return without a spec); 0.0 when it failed."""
    outcome: float
    """The unshaped outcome, 1.0 iff solved."""
    terms: dict[str, float | None]
    """Each term's raw value (None: abstained, gated off or inactive), in spec order."""
    failure: Failure | None
    """What failed outside the model; then ``total`` is no reward of the policy."""
    num_turns: int
    stop_reason: str | None
    """``terminated``, ``env_truncated``, ``max_turns``, ``failed``, or None while the episode runs."""
    task_id: str | None
    metrics: dict[str, float]
    """The fixed-key floats verl and TRL log too (``reward_info``): score, outcome, term/<name>..."""


class MessageEpisode:
    """An agentgym env played one reply at a time; see the module docstring."""

    def __init__(self, env_id: str, *, reward: Any = None, env_kwargs: Mapping[str, Any] | None = None,
                 max_turns: int | None = None) -> None:
        if not isinstance(env_id, str) or not env_id:
            raise ConfigError("env_id", env_id, "a registered env id, e.g. 'SearchQA-v0'")
        if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int)
                                      or max_turns < 1):
            raise ConfigError("max_turns", max_turns, "a positive int or None (the env's own limit)")
        kwargs = dict(env_kwargs or {})
        if reward is not None:
            kwargs["reward"] = reward
        self.env_id, self.reward, self.max_turns = env_id, reward, max_turns
        self.env = gymnasium.make(env_id, **kwargs)
        self.cut = TurnCut.of(self.env)
        self.term_names = term_names_for(reward)
        self.observation = ""
        self.actions: list[str] = []
        self._result = RolloutResult()
        self._failure: Failure | None = None
        self._started = False

    @property
    def stops(self) -> tuple[str, ...]:
        """The strings that close the env's actions: stop strings for the target's sampler."""
        return self.cut.stops

    @property
    def done(self) -> bool:
        return self._result.stop_reason is not None

    @property
    def failure(self) -> Failure | None:
        return self._failure

    # -- playing -------------------------------------------------------------------------
    def reset(self, start: Start | Mapping[str, Any] | None = None) -> str:
        """Start the episode; returns the prompt (the env's first observation). A failed reset ends
        the episode with a ``reset_failed`` (or more specific) failure and returns ""."""
        start = Start.of(start)
        self._result, self._failure, self.actions, self._started = RolloutResult(), None, [], True
        try:
            self.observation, info = self.env.reset(seed=start.seed, options=dict(start.options) or None)
        except _USER_ERRORS:
            raise
        except Exception as exc:  # the env's own failure, not the caller's
            self._fail(Failure.of_exception(exc, during="reset"))
            return ""
        self._result.task_id = info.get("task_id")
        return self.observation

    def step(self, reply: str) -> str:
        """Play one model reply, cut at its first complete action; returns the next observation."""
        if not self._started:
            raise ResetNeeded("reset() the message episode before step()")
        if self.done:
            raise ResetNeeded("the episode is over; reset() it first")
        action = self.action_of(reply)
        self.actions.append(action)
        self._result.num_turns += 1
        try:
            observation, reward, terminated, truncated, info = self.env.step(action)
        except _USER_ERRORS:
            raise
        except Exception as exc:
            self._fail(Failure.of_exception(exc))
            return ""
        self.observation = observation
        self._result.add_step(reward, info, terminated=terminated, truncated=truncated)
        failure = _failure_in(info, self._result)
        if failure is not None:
            self._fail(failure)
        elif terminated or truncated:
            self._result.stop_reason = "terminated" if terminated else "env_truncated"
        elif self.max_turns is not None and self._result.num_turns >= self.max_turns:
            self._result.stop_reason = "max_turns"
        return observation

    async def areset(self, start: Start | Mapping[str, Any] | None = None) -> str:
        """``reset`` on the env thread pool (for async trainers)."""
        return await run_in_env_thread(self.reset, start)

    async def astep(self, reply: str) -> str:
        """``step`` on the env thread pool (for async trainers)."""
        return await run_in_env_thread(self.step, reply)

    def action_of(self, reply: str) -> str:
        """The part of ``reply`` the env reads: up to its first complete action (all of it without one)."""
        end = self.cut.end(reply) if self.cut.stops else None
        return reply if end is None else reply[:end]

    def close(self) -> None:
        self.env.close()

    # -- the end ---------------------------------------------------------------------------
    def end(self) -> EpisodeEnd:
        """The reward, its terms and the failure, so far (final once ``done``)."""
        result = self._result
        score = score_of(result, failure_reward=0.0, unfinished_reward=0.0)
        terms = result.breakdown.terms if result.breakdown is not None else {}
        return EpisodeEnd(total=score, outcome=0.0 if self._failure else result.outcome,
                          terms={name: (terms[name].raw if name in terms else None) for name in self.term_names},
                          failure=self._failure, num_turns=result.num_turns, stop_reason=result.stop_reason,
                          task_id=result.task_id, metrics=extra_info_from(result, self.term_names, score))

    def _fail(self, failure: Failure) -> None:
        self._failure = failure
        self._result.error = failure.message
        self._result.stop_reason = "failed"


def _failure_in(info: Mapping[str, Any], result: RolloutResult) -> Failure | None:
    """The failure a step reports: ``info["failure"]``, else a term that abstained for one."""
    raw = info.get("failure")
    if raw:
        return Failure.model_validate(raw)
    failures = result.breakdown.failures if result.breakdown is not None else {}
    if failures:
        name, reason = next(iter(failures.items()))
        return Failure.model_validate({"reason": reason, "message": f"reward term {name!r} could not score: {reason}"})
    return None
