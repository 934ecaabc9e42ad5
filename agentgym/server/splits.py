"""The task splits a server's clients may pick for an env, and their tasks read a page at a time.

A split is a task set the operator's configuration builds, named:

* after each of the env's presets: the tasks its env plays (the preset's ``tasks``, or the env's default);
* ``train``, ``validation``, ``test`` for an env whose ``tasks`` takes a split name of the operator's world
  (the env's ``task_splits``: TravelPlanner-v0, SearchQA-v0), unless its default preset fixes its
  tasks (a SearchQA preset's own questions and corpus: the embedded world's splits would be searched
  in that corpus): ``tasks=<name>`` on the preset a reset names, else on the env's default preset
  (its first, else its defaults); a preset of the same name wins;
* ``default`` for an env with neither: the tasks it plays with its defaults.

``choose`` turns a reset's ``split`` and ``index`` into the preset, env kwargs and reset options a
session gets; they pass the same trust boundary as any client's. Reading tasks is the server core's
(``EnvServer.splits(env_id)`` builds a ``TaskSplits`` with its reader): it opens a short session of
the split, so the env is built where the server builds envs (a worker process by default), and
asks it for a page (``jobs.tasks_reply``): each task as its env's ``describe_task`` has it (what
the agent is told, never how it is graded), as many whole tasks as fit in ``TASKS_REPLY_BYTES``.
A split whose tasks do not load (a world without a test split) is left out of ``listed``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentgym._toolbox import is_int, short
from agentgym.errors import ConfigError, DataError
from agentgym.core.tasks import TASK_OPTION_RENAMES, TASK_OPTIONS
from agentgym.server._signals import ApiError
from agentgym.server.boundary import ClientBoundary, task_kwargs, world_splits

__all__ = ["Split", "TaskSplits", "TASKS_REPLY_BYTES"]

TASKS_REPLY_BYTES = 1 << 20
"""The most one page of tasks takes (a large split's ``list_tasks`` is a preview: page with ranges)."""
_DEFAULT = "default"
_TASK_OPTIONS = (*TASK_OPTIONS, *TASK_OPTION_RENAMES.retired(TASK_OPTIONS))


@dataclass(frozen=True)
class Split:
    name: str
    preset: str | None
    """The preset the split's env is built from (None: the one the reset names, else the default)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """The env kwargs it adds (``{"tasks": "validation"}``)."""

    @property
    def type(self) -> str:
        """OpenEnv's split type: the name when it is one of OpenEnv's, else ``validation`` (as OpenEnv
        types a name it does not know)."""
        return self.name if self.name in ("train", "validation", "test") else "validation"


PageReader = Callable[[Split, int | None, int | None, int], Awaitable[dict[str, Any]]]
"""``read(split, start, stop, max_bytes)``: the ``{"num_tasks", "tasks"}`` page of a session of ``split``
(``jobs.tasks_reply``); a refusal raises its ``ApiError``."""


class TaskSplits:
    """The splits of ``env_id`` under ``boundary``, their tasks read with ``read``."""

    def __init__(self, boundary: ClientBoundary, env_id: str, read: PageReader) -> None:
        self.boundary, self.env_id, self._read = boundary, env_id, read

    def splits(self) -> list[Split]:
        presets = self.boundary.preset_names(self.env_id)
        named = [Split(name, name) for name in presets]
        if not self._fixes_tasks(None):
            named += [Split(name, None, {"tasks": name}) for name in world_splits(self.env_id) if name not in presets]
        return named or [Split(_DEFAULT, None)]

    def _fixes_tasks(self, preset: str | None) -> bool:
        """Whether ``preset`` (None: the env's default one) names its own tasks."""
        boundary = self.boundary
        names = boundary.preset_names(self.env_id)
        chosen = boundary.presets.get(preset or (names[0] if names else ""))
        return chosen is not None and any(key in chosen.kwargs for key in task_kwargs(self.env_id))

    def split(self, name: Any) -> Split:
        """The split called ``name``; a ``ConfigError`` naming the splits otherwise."""
        splits = self.splits()
        for split in splits:
            if split.name == name:
                return split
        raise ConfigError("split", short(name), [s.name for s in splits])

    def choose(self, split: Any, index: Any, preset: str | None, env_kwargs: dict[str, Any] | None,
               options: dict[str, Any] | None) -> tuple[str | None, dict[str, Any], dict[str, Any] | None]:
        """A reset's ``preset``, ``env_kwargs`` and ``options`` once its ``split`` and ``index`` are in them."""
        env_kwargs = dict(env_kwargs or {})
        if split is not None:
            chosen = self.split(split)
            if chosen.preset is not None and preset not in (None, chosen.preset):
                raise ConfigError("split", short(split), f"{preset!r} (a preset's split is the preset)")
            if chosen.kwargs and self._fixes_tasks(preset):
                raise ConfigError("split", short(split), f"{preset!r} (preset {preset!r} fixes its tasks)")
            if any(key in env_kwargs for key in task_kwargs(self.env_id)):
                raise ConfigError("split", short(split), "either a split or env_kwargs.tasks, not both")
            preset, env_kwargs = chosen.preset or preset, {**env_kwargs, **chosen.kwargs}
        if index is not None:
            if not is_int(index) or index < 0:
                raise ConfigError("index", short(index), "a task's index in its split: an int from 0")
            if options and any(key in options for key in _TASK_OPTIONS):
                raise ConfigError("index", index, "either an index or options.task_index/task_id/task, not both")
            options = {**(options or {}), "task_index": index}
        return preset, env_kwargs, options

    # -- reading tasks -----------------------------------------------------------------------
    async def listed(self) -> list[dict[str, Any]]:
        """Each split whose tasks load: ``{"name", "type", "num_tasks"}``."""
        listed = []
        for split in self.splits():
            try:
                count = await self.count(split.name)
            except DataError:  # e.g. a world with no test split
                continue
            listed.append({"name": split.name, "type": split.type, "num_tasks": count})
        return listed

    async def count(self, name: Any) -> int:
        return (await self.page(name, 0, 0))["num_tasks"]

    async def page(self, name: Any, start: int | None, stop: int | None) -> dict[str, Any]:
        """``{"num_tasks", "tasks"}``: the split's tasks ``[start:stop]``, as many as fit in a reply.

        A refusal raises its error as a client sees it (``DataError``, ``ConfigError``...), and an env
        without a task list ``NotImplementedError`` (OpenEnv answers 501).
        """
        split = self.split(name)
        try:
            page = await self._read(split, start, stop, TASKS_REPLY_BYTES)
        except ApiError as exc:
            raise exc.client_error() from None
        if page["num_tasks"] is None:
            raise NotImplementedError(f"{self.env_id} has no task list")
        return page
