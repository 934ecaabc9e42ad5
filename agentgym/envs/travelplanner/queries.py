"""Deprecated: ``agentgym.envs.travelplanner.tasks`` (renamed in 0.2, removed in 0.3)."""

from agentgym._deprecated import alias, warn_renamed
from agentgym.envs.travelplanner import tasks as _tasks

alias("module", __name__, _tasks.__name__)
warn_renamed(__name__, _tasks.__name__, stacklevel=2)


def __getattr__(name: str) -> object:
    return getattr(_tasks, name)
