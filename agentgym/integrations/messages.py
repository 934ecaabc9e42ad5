"""One agentgym episode at the message level: the model's reply text in, the env's observation text out.

The trainers that talk to an env in messages (verifiers, tinker-cookbook, skyrl-gym) each wrap this
one driver (``MessageEpisode``); it imports none of them::

    task = EnvTask("SearchQA-v0", seed=3, reset_options={"task_index": 7}, reward="prs/short")
    episode = MessageEpisode(task)
    prompt = episode.reset()               # the env's own first observation
    while not episode.done:
        observation = episode.step(model(prompt_so_far, stop=episode.stops))
    end = episode.end()                    # total, outcome, per-term values, failure, fixed-key metrics
    episode.close()                        # the env goes back to the pool

The rules, the same as under verl and TRL (``turns``, ``rollouts``):

* a group's members play one ``rollouts.EnvTask`` (env, seed, reset options, reward spec), so they
  start from the same task; the env comes from the process's ``EnvPool`` (an env whose call raised
  is closed, never reused), so trainers that build an env per trajectory do not rebuild it;
* the prompt is the env's first observation as the env writes it (no JSON wrapping);
* each reply is cut at the env's first complete action (``TextEnv.turn_cut``: stop strings outside
  ``<think>``, or the env's own rule); ``stops`` are for the target's sampling params;
* the reward is the reward spec's total (the env's return without one) and its per-term breakdown
  (``RewardBreakdown.from_info``);
* what fails outside the model is a typed ``Failure`` (``RolloutResult.failure``: an env call that
  raised, ``info["failure"]`` on a step, a term that abstained for a failure): the episode ends
  there and ``end().failure`` says why, so the bridge can put it in its target's failure slot
  instead of paying a 0. The user's own mistakes (``rollouts.is_fatal``: ``ConfigError``,
  ``DataError``, a missing extra) raise.

Env calls block; ``areset``/``astep`` run them on the env thread pool (``agentgym._env_threads``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentgym._env_threads import run_in_env_thread
from agentgym.core.turn_cut import TurnCut
from agentgym.core.types import Failure, StepInfo
from agentgym.errors import ActionTypeError, ConfigError, ResetNeeded
from agentgym.integrations.reward_info import RolloutResult, extra_info_from, score_of, term_names_for
from agentgym.integrations.rollouts import EnvPool, EnvTask, is_fatal

__all__ = ["EpisodeEnd", "MessageEpisode", "env_task", "POOL"]

POOL = EnvPool()
"""The process's idle envs for message episodes (by env id, kwargs and reward spec)."""


def env_task(env_id: str, start: Mapping[str, Any] | None = None, *, reward: Any = None,
             env_kwargs: Mapping[str, Any] | None = None) -> EnvTask:
    """The ``EnvTask`` a row names: ``start`` is ``{"seed": ..., "options": {...}}`` (TRL's task rows)."""
    if not isinstance(env_id, str) or not env_id:
        raise ConfigError("env_id", env_id, "a registered env id, e.g. 'SearchQA-v0'")
    start = dict(start or {})
    if set(start) - {"seed", "options"}:
        raise ConfigError("start", start, "a mapping with 'seed' and/or 'options'")
    seed, options = start.get("seed"), start.get("options") or {}
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError("start.seed", seed, "an int or None")
    if not isinstance(options, Mapping):
        raise ConfigError("start.options", options, "a mapping of reset options, e.g. {'task_index': 3}")
    return EnvTask(env_id, env_kwargs=dict(env_kwargs or {}), reset_options=dict(options), seed=seed, reward=reward)


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

    def __init__(self, task: EnvTask, *, max_turns: int | None = None, pool: EnvPool | None = None) -> None:
        if not isinstance(task, EnvTask):
            raise ConfigError("task", task, "an EnvTask (rollouts.EnvTask or messages.env_task)")
        if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int)
                                      or max_turns < 1):
            raise ConfigError("max_turns", max_turns, "a positive int or None (the env's own limit)")
        self.task, self.max_turns, self.pool = task, max_turns, POOL if pool is None else pool
        self.term_names = term_names_for(task.reward)
        self.env: Any = None
        self.observation = ""
        self.actions: list[str] = []
        self._result = RolloutResult()
        self._started, self._healthy = False, True

    @property
    def cut(self) -> TurnCut:
        """Where the env stops reading a reply (what it declares)."""
        return TurnCut.of(self._env())

    @property
    def unwrapped(self) -> Any:
        """The env itself (its ``tasks``, its ``task``), under the reward wrapper."""
        return self._env().unwrapped

    @property
    def stops(self) -> tuple[str, ...]:
        """The strings that close the env's actions: stop strings for the target's sampler."""
        return self.cut.stops

    @property
    def done(self) -> bool:
        return self._result.stop_reason is not None

    @property
    def failure(self) -> Failure | None:
        return self._result.failure

    # -- playing -------------------------------------------------------------------------
    def reset(self) -> str:
        """Start the episode; returns the prompt (the env's first observation). A failed reset ends
        the episode with a ``reset_failed`` (or more specific) failure and returns ""."""
        self._result, self.actions, self._started = RolloutResult(), [], True
        try:
            self.observation, info = self._env().reset(seed=self.task.seed,
                                                       options=dict(self.task.reset_options) or None)
        except Exception as exc:
            self._raise_or_fail(exc, "reset")
            return ""
        self._result.task_id = StepInfo.view(info).task_id
        return self.observation

    def step(self, reply: str) -> str:
        """Play one model reply, cut at its first complete action; returns the next observation."""
        if not self._started or self.done:
            raise ResetNeeded("reset() the message episode first" if not self._started else
                              "the episode is over; reset() it first")
        if not isinstance(reply, str):
            raise ActionTypeError(f"step() takes the model's reply as a str, got {type(reply).__name__}")
        action = self.action_of(reply)
        self.actions.append(action)
        self._result.num_turns += 1
        try:
            observation, reward, terminated, truncated, info = self.env.step(action)
        except Exception as exc:
            self._raise_or_fail(exc, "step")
            return ""
        self.observation = observation
        self._result.add_step(reward, info, terminated=terminated, truncated=truncated)
        if self._result.failure is not None:
            self._result.stop_reason = "failed"
        elif terminated or truncated:
            self._result.stop_reason = "terminated" if terminated else "env_truncated"
        elif self.max_turns is not None and self._result.num_turns >= self.max_turns:
            self._result.stop_reason = "max_turns"
        return observation

    async def areset(self) -> str:
        """``reset`` on the env thread pool (for async trainers)."""
        return await run_in_env_thread(self.reset)

    async def astep(self, reply: str) -> str:
        """``step`` on the env thread pool (for async trainers)."""
        return await run_in_env_thread(self.step, reply)

    def action_of(self, reply: str) -> str:
        """The part of ``reply`` the env reads: up to its first complete action (all of it without one)."""
        cut = self.cut
        end = cut.end(reply) if cut.stops else None
        return reply if end is None else reply[:end]

    def close(self) -> None:
        """Give the env back to the pool (closed instead when one of its calls raised)."""
        if self.env is not None:
            self.pool.release(self.task, self.env, healthy=self._healthy)
            self.env = None

    # -- the end ---------------------------------------------------------------------------
    def end(self) -> EpisodeEnd:
        """The reward, its terms and the failure, so far (final once ``done``)."""
        result = self._result
        score = score_of(result, failure_reward=0.0, unfinished_reward=0.0)
        terms = result.breakdown.terms if result.breakdown is not None else {}
        return EpisodeEnd(total=score, outcome=0.0 if result.failure else result.outcome,
                          terms={name: (terms[name].raw if name in terms else None) for name in self.term_names},
                          failure=result.failure, num_turns=result.num_turns, stop_reason=result.stop_reason,
                          task_id=result.task_id, metrics=extra_info_from(result, self.term_names, score))

    def _env(self) -> Any:
        if self.env is None:
            self.env, self._healthy = self.pool.acquire(self.task), True
        return self.env

    def _raise_or_fail(self, exc: Exception, during: str) -> None:
        if is_fatal(exc) or isinstance(exc, (ActionTypeError, ResetNeeded)):
            raise exc
        self._healthy = False
        self._result.fail(exc, during=during)
        self._result.stop_reason = "failed"
