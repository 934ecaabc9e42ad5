"""One line of ``results.jsonl``: what an episode did, in a form that survives the process.

A line also holds the rollout record's fields (``agentgym.rewards.lab.rollout_record``: the
prompt, the bounded step infos, the group and the sample index), so a run folder reshapes under
any reward spec (``agentgym.rewards.Rollouts.load``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentgym._deprecated import RenamedKeys
from agentgym._toolbox import is_number
from agentgym.agents.base import EpisodeLog
from agentgym.core.types import StepInfo
from agentgym.rewards.lab.rollouts import bound_infos
from agentgym.rewards.shaper import RewardBreakdown

__all__ = ["EpisodeRecord"]

_FIELDS = RenamedKeys("results.jsonl field", {"evaluation": "report"})


class EpisodeRecord(BaseModel):
    """The result of episode ``episode``. Unknown fields are ignored on load, for newer files."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    episode: int
    seed: int
    task_id: str | None = None
    total_reward: float
    """The sum of the step rewards: the shaped reward with ``--reward``, else the env's own."""
    turns: int
    terminated: bool
    truncated: bool
    terminated_reason: str | None = None
    success: bool | None = None
    """The env's verdict: ``report.final_pass`` (TravelPlanner), ``report.em`` (short QA)."""
    score: float | None = None
    """``report.score`` when the env reports one."""
    reward_terms: dict[str, float | None] = Field(default_factory=dict)
    """Raw value of each shaped reward term (None: abstained or inactive)."""
    invalid_actions: int = 0
    tool_errors: int = 0
    error_codes: dict[str, int] = Field(default_factory=dict)
    duration_s: float = 0.0
    usage: dict[str, int] = Field(default_factory=dict)
    agent_error: str | None = None
    """Set when the agent failed for good and the run records such episodes as failed."""
    actions: list[str] = Field(default_factory=list)
    answer: str | None = None
    """What the episode submitted (the final ``StepInfo.answer``), None when it ended without one."""
    final_observation: str = ""
    report: dict[str, Any] | None = None
    """The env's report of the episode (``StepInfo.report``); lines written by 0.1 call it ``evaluation``."""
    group: str | None = None
    """The group the episode was drawn in (its task's number, ``--samples-per-task``); None before 0.3."""
    sample: int = 0
    """Its index in the group."""
    prompt: str | None = None
    """The env's first observation (None in lines written before 0.3)."""
    infos: list[dict[str, Any]] = Field(default_factory=list)
    """The ``info`` of every step, bounded (``agentgym.rewards.lab.MAX_INFO_BYTES``)."""
    clipped: bool = False
    """True when ``infos`` were cut to their bound."""
    training_step: int | None = None
    total_steps: int | None = None
    """The schedule the reward was shaped at (``--reward``: the episode of the run's episodes)."""

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        return _FIELDS.apply(data, stacklevel=6) if isinstance(data, dict) and "evaluation" in data else data

    @classmethod
    def from_log(cls, episode: int, seed: int, log: EpisodeLog, *, usage: dict[str, int] | None = None,
                 agent_error: str | None = None, group: str | None = None, sample: int = 0,
                 training_step: int | None = None, total_steps: int | None = None) -> EpisodeRecord:
        last, steps = StepInfo.view(log.last_info), [StepInfo.view(info) for info in log.infos]
        infos, clipped = bound_infos(log.infos)
        report = last.report
        codes = Counter(step.error_code for step in steps)
        codes.pop(None, None)
        return cls(
            episode=episode, seed=seed, task_id=last.task_id or StepInfo.view(log.first_info).task_id,
            total_reward=log.total_reward, turns=len(log.actions), terminated=log.terminated,
            truncated=log.truncated or agent_error is not None, terminated_reason=last.terminated_reason,
            success=False if agent_error else _success(report), score=_number((report or {}).get("score")),
            reward_terms=_reward_terms(RewardBreakdown.from_info(log.last_info)),
            invalid_actions=sum(1 for step in steps if step.action == "invalid"),
            tool_errors=sum(1 for step in steps if step.action == "tool" and step.error_code),
            error_codes=dict(codes), duration_s=round(log.duration_s, 4), usage=dict(usage or {}),
            agent_error=agent_error, actions=list(log.actions), answer=last.answer,
            final_observation=log.observations[-1] if log.observations else log.first_observation,
            report=report, group=group, sample=sample, prompt=log.first_observation, infos=infos, clipped=clipped,
            training_step=training_step, total_steps=total_steps)

    def to_json(self) -> str:
        return self.model_dump_json()


def _success(report: dict[str, Any] | None) -> bool | None:
    if not report:
        return None
    if isinstance(report.get("final_pass"), bool):
        return report["final_pass"]
    if isinstance(report.get("em"), (int, float)):
        return report["em"] >= 1.0
    return None


def _number(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def _reward_terms(breakdown: RewardBreakdown | None) -> dict[str, float | None]:
    return {} if breakdown is None else {name: term.raw for name, term in breakdown.terms.items()}
