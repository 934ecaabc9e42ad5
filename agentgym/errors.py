"""Exceptions raised by agentgym for programmer errors.

Model text is never an exception: an env turns nonsense actions into an observation plus an
error code in ``info``. What raises is a mistake in the calling code or its configuration::

    AgentGymError                  root of every exception agentgym raises on purpose
    ├── ConfigError (ValueError)   bad env kwargs, reset options or spec; names field and allowed values
    ├── DataError (ValueError)     a world, query or plan file that is missing or malformed
    ├── ActionTypeError (TypeError) step() got something that is not a str
    ├── ResetNeeded (RuntimeError) step() after the episode ended, or before reset()
    └── DependencyNotInstalled (ImportError)  an optional extra is needed for this call
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "AgentGymError",
    "ConfigError",
    "DataError",
    "ActionTypeError",
    "ResetNeeded",
    "DependencyNotInstalled",
]


class AgentGymError(Exception):
    """Root of every exception agentgym raises on purpose."""


class ConfigError(AgentGymError, ValueError):
    """Raised when a kwarg, option or spec field has a value agentgym cannot use."""

    def __init__(self, field: str, value: Any, allowed: str | Iterable[Any]) -> None:
        if not isinstance(allowed, str):
            allowed = ", ".join(repr(a) for a in allowed)
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"{field}={value!r} is not allowed; expected {allowed}")


class DataError(AgentGymError, ValueError):
    """Raised when a world, query or plan file is missing or cannot be read."""


class ActionTypeError(AgentGymError, TypeError):
    """Raised when ``step()`` receives something other than a ``str``."""


class ResetNeeded(AgentGymError, RuntimeError):
    """Raised when ``step()`` is called before ``reset()`` or after the episode ended."""


class DependencyNotInstalled(AgentGymError, ImportError):
    """Raised when a call needs an optional extra, e.g. ``pip install 'agentgym[hf]'``."""
