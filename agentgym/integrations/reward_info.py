"""How a trainer's rollout ended (``RolloutResult``), and its reward info: floats under a key set
fixed per env and reward spec, which the verl and TRL integrations both log.

verl builds its reward columns from the first trajectory's keys and its group filter looks one
key up in every trajectory, so every trajectory of a run must carry the same keys, whether its
episode finished, ran out of tokens or crashed::

    score             the reward paid (the shaped total, or the env's own return)
    outcome           the unshaped outcome, 1.0 iff solved: filter groups on this
    model_turns       model turns taken (verl's own ``num_turns`` counts the prompt and the
                      observations too)
    truncated         1.0 when the episode did not end by the agent's own answer
    env_failed        1.0 when the env raised (in construction, reset or step)
    failed            1.0 when something outside the model failed (``RolloutResult.failure``: the env,
                      a retriever or judge that did not answer, a timeout, a lost worker)
    abstained         1.0 when every reward term abstained (the reward says nothing)
    masked            1.0 when the trajectory is left out of training (loss mask 0, out of its
                      group's baseline): failed, reward abstained, or a configuration error
    term/<name>       each reward term's raw value (0.0 when absent or abstaining)
    term/<name>/abstained  1.0 when the term abstained
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from agentgym._deprecated import module_aliases
from agentgym._toolbox import is_number
from agentgym.core.types import Failure, FailureReason, StepInfo
from agentgym.rewards.shaper import RewardBreakdown

__all__ = ["RolloutResult", "reward_keys", "term_names_for", "extra_info_from", "score_of"]

__getattr__ = module_aliases(__name__, {"EpisodeResult": "RolloutResult"})

BASE_KEYS = ("score", "outcome", "model_turns", "truncated", "env_failed", "failed", "abstained", "masked")


@dataclass
class RolloutResult:
    """How a trainer's rollout of an env ended: the loop's own account (turns, stop reason, env
    error) and the typed records of the env's last step (reward breakdown, report)."""

    env_return: float = 0.0
    """Sum of the env's rewards (agentgym envs pay on the last step only)."""
    task_id: str | None = None
    num_turns: int = 0
    """Model turns taken."""
    observations: int = 0
    """Observations appended after model turns."""
    done: bool = False
    """The env ended the episode (terminated or truncated by its own ``max_turns``)."""
    terminated: bool = False
    """The agent ended it (answer or give-up)."""
    breakdown: RewardBreakdown | None = None
    """The shaped reward's breakdown, when the episode ended under a reward spec."""
    report: dict[str, Any] | None = None
    """The env's report (``StepInfo.report``), when the episode ended with one."""
    stop_reason: str | None = None
    """Why the loop stopped: ``terminated``, ``env_truncated``, ``max_turns``, ``max_observations``,
    ``response_length``, ``env_error``, ``config_error``."""
    error: str | None = None
    """``Type: message`` of the env exception, when one was raised."""
    fatal: bool = False
    """The error is the user's configuration (``ConfigError``, a missing dependency): the run must stop."""
    actions: list[str] = field(default_factory=list)
    """What each step's action was read as (``StepInfo.action``: ``tool``, ``answer``, ``invalid``...)."""
    cause: BaseException | None = field(default=None, repr=False, compare=False)
    """The exception of an env call that raised, for a trainer that re-raises it."""
    failure: Failure | None = None
    """What failed outside the model, first: an env call that raised (``fail``), a step's
    ``info["failure"]`` (a retriever that did not answer), a reward term that could not score (a judge)."""

    def add_step(self, reward: float, info: Mapping[str, Any], *, terminated: bool, truncated: bool) -> None:
        """Count one env step; keep the first failure a step reports and, on the last step, the
        reward breakdown and report."""
        step = StepInfo.view(info)
        self.env_return += float(reward)
        self.task_id = step.task_id or self.task_id
        self.actions.append(str(step.action))
        if self.failure is None:
            self.failure = step.failure
        if terminated or truncated:
            self.done, self.terminated = True, bool(terminated)
            self.breakdown, self.report = RewardBreakdown.from_info(info), step.report
            failures = self.breakdown.failures if self.breakdown is not None else {}
            if self.failure is None and failures:
                name, reason = next(iter(failures.items()))
                self.failure = Failure(reason=FailureReason(reason),
                                       message=f"reward term {name!r}: {self.breakdown.terms[name].reason}")

    def fail(self, exc: BaseException, *, during: str) -> None:
        """Record an env call that raised (``during`` ``reset`` or ``step``) as the episode's failure."""
        self.error = f"{type(exc).__name__}: {exc}"
        self.stop_reason = "env_error"
        if self.failure is None:  # the first failure is what broke the episode
            self.failure = Failure.of_exception(exc, during="reset" if during == "reset" else "step")

    @property
    def outcome(self) -> float:
        """The unshaped outcome: the breakdown's, else the env's return of an episode that ended well."""
        if self.breakdown is not None:
            return self.breakdown.outcome
        return self.env_return if self.done and self.error is None else 0.0

    @property
    def abstained(self) -> bool:
        """Every reward term abstained (``RewardBreakdown.all_abstained``)."""
        return self.breakdown is not None and self.breakdown.all_abstained

    @property
    def masked(self) -> bool:
        """Left out of training and of its group's baseline: failed, abstained, or a configuration error."""
        return self.error is not None or self.failure is not None or self.abstained

    @property
    def left_out_reason(self) -> str | None:
        """Why the trajectory is left out (a ``FailureReason`` value, ``abstained``, ``config_error``), or None."""
        if self.fatal:
            return "config_error"
        if self.failure is not None:
            return self.failure.reason.value
        if self.error is not None:
            return FailureReason.ENV_ERROR.value
        return "abstained" if self.abstained else None


def reward_keys(term_names: Sequence[str]) -> list[str]:
    """Every key of the extra info, in order, for a reward spec with these terms."""
    return [*BASE_KEYS, *(f"term/{n}" for n in term_names), *(f"term/{n}/abstained" for n in term_names)]


@lru_cache(maxsize=64)
def _term_names_cached(spec_key: str) -> tuple[str, ...]:
    import json

    from agentgym.rewards import build_shaper

    return build_shaper(json.loads(spec_key)).term_names


def term_names_for(reward: Any) -> tuple[str, ...]:
    """The term names of a reward preset or spec (none without a spec)."""
    if reward is None:
        return ()
    import json

    return _term_names_cached(json.dumps(reward, sort_keys=True, default=str))


def score_of(result: RolloutResult, *, failure_reward: float, unfinished_reward: float) -> float:
    """The trajectory's reward: the env's when the episode ended, else the configured fallback
    (a failed trajectory's never reaches a baseline: the trainers leave it out)."""
    if result.error is not None or result.failure is not None:
        return float(failure_reward)
    if not result.done:
        return float(unfinished_reward)
    return _finite(result.env_return)


def extra_info_from(result: RolloutResult, term_names: Sequence[str], score: float) -> dict[str, float]:
    """The fixed-key float dict for verl's ``reward_extra_info``."""
    info = {"score": float(score), "outcome": _finite(result.outcome), "model_turns": float(result.num_turns),
            "truncated": 0.0 if result.terminated else 1.0, "env_failed": 0.0 if result.error is None else 1.0,
            "failed": float(result.failure is not None), "abstained": float(result.abstained),
            "masked": float(result.masked)}
    terms = result.breakdown.terms if result.breakdown is not None else {}
    for name in term_names:
        term = terms.get(name)
        info[f"term/{name}"] = 0.0 if term is None or term.raw is None else term.raw
    for name in term_names:
        term = terms.get(name)
        info[f"term/{name}/abstained"] = 1.0 if term is not None and term.abstained else 0.0
    return info


def _finite(value: float) -> float:
    return float(value) if is_number(value) else 0.0
