"""Deprecated: ``agentgym.envs.searchqa.actions`` (renamed in 0.2, removed in 0.3)."""

from agentgym._deprecated import alias, warn_renamed
from agentgym.envs.searchqa import actions as _actions

alias("module", __name__, _actions.__name__)
warn_renamed(__name__, _actions.__name__, stacklevel=2)


def __getattr__(name: str) -> object:
    return getattr(_actions, name)
