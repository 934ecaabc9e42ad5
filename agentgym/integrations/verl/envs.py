"""Envs for the agent loop: verl's rows read as tasks, the per-process env pool, verl's clock.

Rows prepared by Search-R1 itself (``data_source``, ``prompt``, ``reward_model.ground_truth.target``,
``extra_info = {split, index}``, no ``env_id``) are accepted as they are: ``row_extra_info`` maps
them onto ``SearchQA-v0`` with ``action_format="search-r1"`` (``SEARCH_R1_ROW_DEFAULTS``), the row's
question, id, prompt and gold answers played through the reset option ``task``. The corpus or retriever
comes from the run's ``agentgym.env_kwargs``, as for agentgym's own rows.

verl makes one agent-loop object per trajectory, but building an env can be costly (the
TravelPlanner world, a BM25 index), so instances are pooled per process (``ENV_POOL``, an
``agentgym.integrations.rollouts.EnvPool``) and reused across trajectories with the same id,
kwargs and reward spec; ``rollouts.play_rollout`` runs resets and steps on the env threads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentgym._toolbox import plain
from agentgym.integrations.rollouts import Clock, EnvPool
from agentgym.integrations.verl._section import select
from agentgym.integrations.verl.config import AgentGymConfig

__all__ = ["EnvPool", "ENV_POOL", "row_extra_info", "SEARCH_R1_ROW_DEFAULTS", "clock_of", "total_steps_of",
           "training_step_of"]

SEARCH_R1_ROW_DEFAULTS = {"env_id": "SearchQA-v0", "env_kwargs": {"action_format": "search-r1"}}
"""What a Search-R1-prepared row (no ``extra_info.env_id``) is played as."""

ENV_POOL = EnvPool()
"""The pool the agent loop uses (one per Ray worker process)."""


def row_extra_info(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row's ``extra_info``; a Search-R1 row's is completed so that it plays ``SearchQA-v0`` (module docstring)."""
    info = dict(plain(row.get("extra_info")) or {})
    if info.get("env_id") is not None:
        return info
    reward_model = plain(row.get("reward_model"))
    truth = reward_model.get("ground_truth") if isinstance(reward_model, Mapping) else None
    target = truth.get("target") if isinstance(truth, Mapping) else None
    if target is None or isinstance(target, (str, bytes)) and not target:
        return info  # not a Search-R1 row: ``EnvTask.from_extra_info`` reports the missing env_id
    golds = [target] if isinstance(target, str) else [str(a) for a in list(target)]
    source, row_id = plain(row.get("data_source")), plain(row.get("id"))
    # The row's own question and id (Search-R1's rows keep the dataset's columns); the prompt's last
    # "Question:" only when the row has neither a question nor extra_info.question.
    text = next((q for q in (plain(row.get("question")), info.get("question")) if isinstance(q, str) and q.strip()),
                None)
    question = {"id": str(row_id) if row_id is not None else
                f"{source or 'search-r1'}-{info.get('split', 'row')}-{info.get('index', 0)}",
                "golden_answers": golds, "prompt": _messages(row.get("raw_prompt", row.get("prompt"))),
                **({"question": text} if text is not None else {}),
                **({"data_source": source} if isinstance(source, str) else {})}
    options = {**(_decoded(info.get("reset_options")) or {}), "task": question}
    return {**info, "env_id": SEARCH_R1_ROW_DEFAULTS["env_id"],
            "env_kwargs": json.dumps({**SEARCH_R1_ROW_DEFAULTS["env_kwargs"],
                                      **(_decoded(info.get("env_kwargs")) or {})}),
            "reset_options": json.dumps(options), "task_index": None}


def _messages(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    return [dict(m) for m in list(value) if isinstance(m, Mapping)]


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        return json.loads(value) if value.strip() else None
    return value


def clock_of(global_steps: int | None, config: Any, agentgym: AgentGymConfig) -> Clock:
    """The schedule clock at verl's global step (the agent loop and ``--dry-run`` reset envs by it)."""
    return Clock(training_step_of(global_steps), total_steps_of(config, agentgym))


def training_step_of(global_steps: int | None) -> int | None:
    """The 0-based training step of verl's global step: verl counts steps 1..total_training_steps,
    a scheduled reward's stages cover [0, total_steps), so a 100/300/100 curriculum of 500 steps
    gives verl's steps 1-100, 101-400 and 401-500 (validation before training, step 0, reads as 0)."""
    return None if global_steps is None else max(0, global_steps - 1)


def total_steps_of(config: Any, agentgym: AgentGymConfig) -> int | None:
    """The run length in training steps: ``agentgym.total_steps``, else ``trainer.total_training_steps``,
    else what verl's trainer computed (epochs x steps per epoch) and wrote into the actor's optimizer
    config, divided by its local updates per step, before the agent-loop workers were built."""
    if agentgym.total_steps is not None:
        return agentgym.total_steps
    trainer = _select(config, "trainer")
    explicit = _positive(_select(trainer, "total_training_steps"))
    if explicit is not None:
        return explicit
    optim = _positive(_select(_select(_select(_select(config, "actor_rollout_ref"), "actor"), "optim"),
                              "total_training_steps"))
    if optim is None:
        return None
    v1 = _select(trainer, "v1")
    mode = _select(v1, "trainer_mode")
    sync_steps = _positive(_select(_select(v1, mode), "parameter_sync_step")) if mode else None
    return max(1, optim // (sync_steps or 1))


def _select(node: Any, key: Any) -> Any:
    try:
        return select(node, key)
    except Exception:  # an OmegaConf node with a missing value
        return None


def _positive(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 1 else None
