"""Envs for the agent loop: a per-process pool of idle instances and a thread pool to run them.

Rows prepared by Search-R1 itself (``data_source``, ``prompt``, ``reward_model.ground_truth.target``,
``extra_info = {split, index}``, no ``env_id``) are accepted as they are: ``row_extra_info`` maps
them onto ``SearchQA-v0`` with ``action_format="search-r1"`` (``SEARCH_R1_ROW_DEFAULTS``), the row's
question, id, prompt and gold answers played through the reset option ``task``. The corpus or retriever
comes from the run's ``agentgym.env_kwargs``, as for agentgym's own rows.

verl makes one agent-loop object per trajectory, but building an env can be costly (the
TravelPlanner world, a BM25 index), so instances are pooled per process and reused across
trajectories with the same id, kwargs and reward spec. Resets and steps run on the process's env
threads (``agentgym._env_threads``) so a slow env never blocks the worker's event loop, where every
other trajectory's generation waits.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import gymnasium

from agentgym._env_threads import run_in_env_thread
from agentgym._toolbox import plain
from agentgym.integrations.verl._section import select
from agentgym.integrations.verl.config import AgentGymConfig, EnvTask

__all__ = ["EnvPool", "ENV_POOL", "run_off_loop", "row_extra_info", "SEARCH_R1_ROW_DEFAULTS",
           "reset_options", "total_steps_of", "training_step_of"]

SEARCH_R1_ROW_DEFAULTS = {"env_id": "SearchQA-v0", "env_kwargs": {"action_format": "search-r1"}}
"""What a Search-R1-prepared row (no ``extra_info.env_id``) is played as."""

T = TypeVar("T")


class EnvPool:
    """Idle env instances by ``EnvTask.env_key()``; an env is owned by one trajectory at a time."""

    def __init__(self, max_idle_per_key: int = 256) -> None:
        self.max_idle_per_key = max_idle_per_key
        self._idle: dict[str, list[gymnasium.Env]] = defaultdict(list)
        self._lock = threading.Lock()
        self._make_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)

    def acquire(self, task: EnvTask) -> gymnasium.Env:
        """An idle env for the task, or a new one (blocking: call it off the event loop)."""
        key = task.env_key()
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
            make_lock = self._make_locks[key]
        # One construction at a time per key: the first builds shared caches (the TravelPlanner
        # world, a BM25 index) that concurrent first constructions would otherwise race to write.
        with make_lock:
            return task.make()

    def release(self, task: EnvTask, env: gymnasium.Env, *, healthy: bool) -> None:
        """Give the env back; an env that raised is closed instead, as its state is unknown."""
        if healthy:
            with self._lock:
                idle = self._idle[task.env_key()]
                if len(idle) < self.max_idle_per_key:
                    idle.append(env)
                    return
        _close_quietly(env)

    def clear(self) -> None:
        """Close every idle env."""
        with self._lock:
            envs = [env for idle in self._idle.values() for env in idle]
            self._idle.clear()
        for env in envs:
            _close_quietly(env)

    def idle_count(self, task: EnvTask) -> int:
        with self._lock:
            return len(self._idle.get(task.env_key(), ()))


ENV_POOL = EnvPool()
"""The pool the agent loop uses (one per Ray worker process)."""


async def run_off_loop(fn: Callable[..., T], *args: Any, max_workers: int = 8) -> T:
    """Run a blocking env call on the process's env threads (``agentgym._env_threads``: the rule
    for which calls may share threads) and await its result."""
    return await run_in_env_thread(fn, *args, max_workers=max_workers)


def _close_quietly(env: gymnasium.Env) -> None:
    try:
        env.close()
    except Exception:  # closing a broken env must not mask the error that broke it
        pass


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


def reset_options(task: EnvTask, agentgym: AgentGymConfig, training_step: int | None,
                  total_steps: int | None) -> dict[str, Any]:
    """The row's reset options plus the training step and run length a scheduled reward needs
    (the agent loop and ``--dry-run`` reset envs through this one function)."""
    options = dict(task.reset_options)
    if agentgym.pass_training_step and training_step is not None and task.reward is not None:
        options["training_step"] = training_step
        if total_steps is not None:
            options["total_steps"] = total_steps
    return options


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
