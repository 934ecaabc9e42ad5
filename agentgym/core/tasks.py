"""The reset options that choose an episode's task, read the same way by every env.

``reset(options={"task_index": i})``, ``{"task_id": "train-3"}`` or ``{"task": row_or_task}``;
with none of them, the task is drawn with the env's seeded generator.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from agentgym._deprecated import RenamedKeys
from agentgym._toolbox import require_int
from agentgym.errors import ConfigError

__all__ = ["TASK_OPTIONS", "SCHEDULE_OPTIONS", "TASK_OPTION_RENAMES", "pick_task", "task_field"]

T = TypeVar("T")

TASK_OPTIONS = ("task_index", "task_id", "task")
SCHEDULE_OPTIONS = ("training_step", "total_steps")
"""The reset options of a reward schedule: a shaper reads them, an env without one checks and ignores them."""
TASK_OPTION_RENAMES = RenamedKeys("reset option", {"query_index": "task_index", "query_id": "task_id",
                                                   "query": "task"})


def pick_task(options: Mapping[str, Any], tasks: Sequence[T], ids: Mapping[str, int],
              rng: np.random.Generator, read: Callable[[Any], T]) -> T:
    """The task ``options`` name among ``tasks`` (``ids``: id -> position), or a seeded draw.

    A task is any object with an ``id`` attribute, or a dict with an ``"id"`` key. A task that
    is not among them, or no tasks to pick from, is a ``ConfigError`` naming the option.
    ``read`` turns the ``task`` option (a task object or a row) into a task, raising
    ``ConfigError`` when it cannot.
    """
    unknown = sorted(set(options) - set(TASK_OPTIONS))
    if unknown:
        allowed = [*TASK_OPTIONS, *SCHEDULE_OPTIONS]  # the schedule's were taken before: name them too
        close = difflib.get_close_matches(unknown[0], allowed, n=1)
        hint = f"{close[0]!r} or another" if close else "a"
        raise ConfigError("options", unknown, f"{hint} reset option among {allowed}")
    if "task" in options:
        return read(options["task"])
    if not tasks:  # a draw, an index or an id needs loaded tasks (numpy would raise a bare ValueError)
        raise ConfigError("tasks", [], "at least one loaded task, or options={'task': ...}")
    if "task_id" in options:
        return tasks[_position(options["task_id"], tasks, ids)]
    if "task_index" in options:
        return tasks[require_int("task_index", options["task_index"], low=0, high=len(tasks) - 1)]
    return tasks[int(rng.integers(len(tasks)))]


def _position(task_id: Any, tasks: Sequence[Any], ids: Mapping[str, int]) -> int:
    if not isinstance(task_id, str) or task_id not in ids:
        raise ConfigError("task_id", task_id, f"an id of the loaded tasks, e.g. {task_field(tasks[0], 'id')!r}")
    return ids[task_id]


def task_field(task: Any, name: str) -> str:
    """A task's ``id`` or ``text``: its attribute, or its key for a task that is a dict ("" if none)."""
    return str(task.get(name, "") if isinstance(task, Mapping) else getattr(task, name, ""))
