"""The rollout record: what shaping a played episode again needs, in one JSON object.

Every source of rollouts writes it the same way: ``agentgym run`` (a line of ``results.jsonl``
holds its fields), the agentgym verl loop (a column of verl's rollout dump) and the TRL rollout
(its ``log_dir`` JSONL). A trainer builds one from what it has::

    record = rollout_record(first_observation, actions, step_infos, task_id="train-3",
                            group="step12-7", sample=2, env_id="TravelPlanner-v0")
    rollout = Rollout.from_record(record)      # what Rollouts.load gives back

or lets the env note them as it plays: ``RecordedEnv(env)`` (or ``RecordingPool(pool)`` around a
trainer's env pool) keeps the first observation, the actions and the infos; ``.record(group=...)``
builds the record.

The step infos are bounded: a record keeps at most ``MAX_INFO_BYTES`` of them (JSON, UTF-8), and
says ``clipped: true`` when it had to cut (see :func:`bound_infos`). Nothing agentgym's envs
write comes near the limit (a 30-step TravelPlanner episode is about 30 kB).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentgym._toolbox import clip
from agentgym.rewards.episode import Episode, outcome_of
from agentgym.rewards.shaper import RewardBreakdown

__all__ = ["Rollout", "rollout_record", "bound_infos", "RecordedEnv", "RecordingPool", "MAX_INFO_BYTES",
           "RECORD_FORMAT"]

MAX_INFO_BYTES = 256 * 1024
"""The most bytes a record's step infos take, JSON-encoded in UTF-8; past it they are cut (``clipped``)."""
RECORD_FORMAT = "agentgym.rollout/1"
"""The ``format`` key of a rollout record, so readers know it from other JSON lines."""

# What the built-in reward terms read of a step that is not the last: kept when infos are cut.
_SKELETON = ("turn", "action", "error", "terminated_reason", "task_id", "failure")


class Rollout(BaseModel):
    """One played episode as a record keeps it: enough to shape its reward again, under any spec.

    ``group`` and ``sample`` place it among the rollouts of one task drawn together (GRPO's group,
    ``agentgym run --samples-per-task``); ``total`` is the reward it was paid when played, at
    ``training_step`` of ``total_steps`` (a scheduled reward's clock).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    format: str = RECORD_FORMAT
    task_id: str | None = None
    group: str
    """The group it was drawn in: rollouts of one task that share a baseline."""
    sample: int = Field(0, ge=0)
    """Its index in the group."""
    prompt: str
    """The env's first observation."""
    actions: list[str] = Field(default_factory=list)
    infos: list[dict[str, Any]] = Field(default_factory=list)
    """The ``info`` dict of every step after reset (bounded, see ``clipped``)."""
    clipped: bool = False
    """True when the infos were cut to ``MAX_INFO_BYTES``: shaping them again may differ from the live reward."""
    env_id: str | None = None
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """The env's kwargs (without ``reward``), to rebuild what the reward terms know of the task."""
    seed: int | None = None
    training_step: int | None = None
    total_steps: int | None = None
    total: float | None = None
    """The reward paid when it was played (None when unknown)."""
    source: str | None = Field(None, exclude=True)
    """Where it was read from (a file and line), for messages; not part of the record."""

    @classmethod
    def from_record(cls, record: Mapping[str, Any], *, source: str | None = None) -> Rollout:
        """Read a record :func:`rollout_record` wrote (pydantic's ``ValidationError`` on anything else)."""
        return cls.model_validate({**record, "source": source})

    @property
    def breakdown(self) -> RewardBreakdown | None:
        """The live reward's breakdown, when the episode was shaped as it was played."""
        return RewardBreakdown.from_info(self.infos[-1]) if self.infos else None

    @property
    def outcome(self) -> float:
        """The unshaped outcome (1.0 iff solved): the live breakdown's, else what the final report says."""
        live = self.breakdown
        if live is not None:
            return live.outcome
        report = self.infos[-1].get("report") if self.infos else None
        return outcome_of(report if isinstance(report, Mapping) else None)

    @property
    def key(self) -> str:
        """``task_id/group/sample`` (and the source), how messages name the rollout."""
        where = f" ({self.source})" if self.source else ""
        return f"{self.task_id}/{self.group}/{self.sample}{where}"

    def episode(self, **context: Any) -> Episode:
        """The rollout as reward terms score it, told ``context`` (the env's ``task_context``)."""
        return Episode.from_infos(self.infos, actions=self.actions, prompt=self.prompt, **context)

    def to_record(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def rollout_record(prompt: str, actions: Sequence[str], infos: Sequence[Mapping[str, Any]], *,
                   group: str | int, sample: int = 0, task_id: str | None = None, env_id: str | None = None,
                   env_kwargs: Mapping[str, Any] | None = None, seed: int | None = None,
                   training_step: int | None = None, total_steps: int | None = None,
                   total: float | None = None) -> dict[str, Any]:
    """The rollout record (a JSON-ready dict) of one played episode.

    Args:
        prompt: the env's first observation.
        actions: the action text of every step, in order.
        infos: the ``info`` dict of every step (a leading reset info is dropped); cut to
            ``MAX_INFO_BYTES`` when larger (:func:`bound_infos`).
        group: the group the rollout was drawn in (a trainer's prompt uid, a run's task number).
        sample: its index in the group.
        task_id: the task it played (``StepInfo.task_id``; read from the infos when not given).
        env_id: the env it was played on.
        env_kwargs: the env's kwargs (``reward`` is left out: the lab shapes afresh).
        seed: the seed the env was reset with.
        training_step: the training step its reward was shaped at.
        total_steps: the run's length, for a schedule in fractions of it.
        total: the reward it was paid.
    """
    steps = list(infos)
    if steps and steps[0].get("action") == "reset" and steps[0].get("turn") == 0:
        steps = steps[1:]
    bounded, clipped = bound_infos(steps)
    if task_id is None:
        task_id = next((i.get("task_id") for i in reversed(bounded) if i.get("task_id")), None)
    kwargs = {k: v for k, v in (env_kwargs or {}).items() if k != "reward"}
    return {"format": RECORD_FORMAT, "task_id": task_id, "group": str(group), "sample": int(sample),
            "prompt": str(prompt), "actions": [str(a) for a in actions], "infos": bounded, "clipped": clipped,
            "env_id": env_id, "env_kwargs": json.loads(json.dumps(kwargs, default=str)), "seed": seed,
            "training_step": training_step, "total_steps": total_steps,
            "total": None if total is None else float(total)}


def bound_infos(infos: Sequence[Mapping[str, Any]], limit: int = MAX_INFO_BYTES) -> tuple[list[dict[str, Any]], bool]:
    """The infos as plain JSON values, at most ``limit`` bytes together, and whether they were cut.

    Over the limit, cuts go from what no built-in term reads to what they do, until the infos fit:
    tool result texts and the ``extra`` of non-final steps; then every non-final step but its turn,
    action kind, error, end reason, task id and failure; then the non-final steps after the first
    ones that fit; last, the final step's answer (clipped) and report (dropped).
    """
    texts = [json.dumps(dict(info), ensure_ascii=False, default=str) for info in infos]
    if sum(len(t.encode("utf-8")) for t in texts) + len(texts) <= limit:
        return [json.loads(t) for t in texts], False
    steps = [json.loads(t) for t in texts]
    for cut in (_without_texts, _skeleton):
        steps = [cut(step) if i < len(steps) - 1 else _without_texts(step, final=True) for i, step in enumerate(steps)]
        if _size(steps) <= limit:
            return steps, True
    final = steps[-1] if steps else None
    if final is not None and _size([final]) > limit // 2:
        final = {**_skeleton(final), "answer": _clipped_answer(final.get("answer"), limit // 4),
                 "reward": final.get("reward") if _size([final.get("reward")]) < limit // 4 else None}
    kept, room = [], limit - (_size([final]) if final is not None else 0)
    for step in steps[:-1]:
        room -= _size([step])
        if room < 0:
            break
        kept.append(step)
    return kept + ([final] if final is not None else []), True


def _without_texts(step: dict[str, Any], final: bool = False) -> dict[str, Any]:
    out = dict(step)
    result = step.get("tool_result")
    if isinstance(result, dict):
        out["tool_result"] = {**result, "content": ""}
    if not final:
        out["extra"] = {}
    return out


def _skeleton(step: dict[str, Any]) -> dict[str, Any]:
    out = {key: step[key] for key in _SKELETON if key in step}
    result = step.get("tool_result")
    if isinstance(result, dict):  # tool_error_rate reads whether the tool failed
        out["tool_result"] = {"content": "", "n_rows": result.get("n_rows", 0), "error": result.get("error")}
    return out


def _clipped_answer(answer: Any, chars: int) -> Any:
    return clip(answer, chars) if isinstance(answer, str) else answer


def _size(steps: Sequence[Any]) -> int:
    return sum(len(json.dumps(s, ensure_ascii=False).encode("utf-8")) + 1 for s in steps)


class RecordedEnv:
    """An env that notes what its rollout record needs as a trainer plays it: the first observation,
    each action and each step's info (everything else is the env's own)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.prompt: str | None = None
        self.actions: list[str] = []
        self.infos: list[dict[str, Any]] = []

    @property
    def unwrapped(self) -> Any:
        return getattr(self.env, "unwrapped", self.env)

    def reset(self, **kwargs: Any) -> Any:
        observation, info = self.env.reset(**kwargs)
        self.prompt, self.actions, self.infos = str(observation), [], []
        return observation, info

    def step(self, action: str) -> Any:
        stepped = self.env.step(action)
        self.actions.append(str(action))
        self.infos.append(stepped[4])
        return stepped

    def record(self, **fields: Any) -> dict[str, Any]:
        """The rollout record of the episode played so far (``fields`` as :func:`rollout_record` takes them)."""
        return rollout_record(self.prompt or "", self.actions, self.infos, **fields)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)


class RecordingPool:
    """A trainer's env pool (``acquire(task)``, ``release(task, env, healthy=)``) whose env, while one rollout
    plays it, is a :class:`RecordedEnv`: ``pool.env.record(...)`` after the rollout. One per rollout."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.env: RecordedEnv | None = None

    def acquire(self, task: Any) -> RecordedEnv:
        self.env = RecordedEnv(self.pool.acquire(task))
        return self.env

    def release(self, task: Any, env: Any, *, healthy: bool) -> None:
        self.pool.release(task, env.env if isinstance(env, RecordedEnv) else env, healthy=healthy)
