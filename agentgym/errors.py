"""Exceptions raised by agentgym for programmer errors.

Model text is never an exception: an env turns nonsense actions into an observation plus an
error code in ``info``. What raises is a mistake in the calling code or its configuration::

    AgentGymError                  root of every exception agentgym raises on purpose
    ├── ConfigError (ValueError)   bad env kwargs, reset options or spec; names field and allowed values
    ├── DataError (ValueError)     a world, task or plan file that is missing or malformed
    ├── ActionTypeError (TypeError) step() got something that is not a str
    ├── ResetNeeded (RuntimeError) step() after the episode ended, or before reset()
    ├── StorageError (OSError)     a run folder or a cache could not be written (full disk, permissions, I/O)
    ├── DependencyNotInstalled (ImportError)  an optional extra is needed for this call
    ├── RemoteEnvError             a call to an env server failed (``agentgym.remote``)
    │   ├── ServerUnavailable (ConnectionError)  no answer, or the server is full (503, 429), after retries
    │   ├── Unauthorized (PermissionError)  missing or wrong bearer token (401)
    │   ├── SessionNotFound (LookupError)  unknown, expired (TTL) or another client's session (404)
    │   │   └── WorkerLost            the session's env died with its worker process (404)
    │   ├── RequestRejected (ValueError)  the server refused the request: too large (413), malformed (422)
    │   └── RemoteTimeout (TimeoutError)  the env call outlived its timeout (504); the session is closed
    ├── ModelEndpointError (RuntimeError)  a chat-completions endpoint failed or sent an unusable reply
    ├── RetrieverError (RuntimeError)  a search could not be carried out (retriever down, slow, garbled)
    ├── JudgeReplyError (ValueError)  a judge reply with no usable ``Score: N`` line (``parse_score``)
    ├── EpisodeFailed (RuntimeError)  something outside the model failed an episode (``.failure``), raised
    │                                 where a trainer's failure slot is an exception
    └── TrainingAborted (RuntimeError)  a training run would learn nothing trustworthy: a configuration
                                        error in a rollout, or the failure budget spent

Every exception class of the package is here and exported from ``agentgym``: ``__all__`` is built
from the classes, and a test holds this drawing to them; private ones
(underscore names, or in private modules) are internal signals that never reach the caller.
Env errors raised on an env server (``ConfigError``, ``ResetNeeded``, ...) are raised again, as the
same class, by ``RemoteEnv``; any other exception of a served env comes back as ``RemoteEnvError``.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any


class AgentGymError(Exception):
    """Root of every exception agentgym raises on purpose."""


MAX_FIELD_CHARS, MAX_VALUE_CHARS, MAX_ALLOWED_CHARS = 200, 200, 1000
"""Caps on the parts of a ConfigError message: the value may be a megabyte of someone's text."""

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = MAX_VALUE_CHARS
_REPR.maxlong, _REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 60, 3, 8, 8, 8
_REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = _REPR.maxarray = 8


def short_repr(value: Any) -> str:
    """``repr(value)`` bounded to about MAX_VALUE_CHARS, for values echoed in messages."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"<{type(value).__name__} of {value.bit_length()} bits>"  # repr() refuses ints past 4,300 digits
    try:
        text = _REPR.repr(value)
    except Exception:  # a repr that raises must not hide the error
        text = f"<{type(value).__name__}>"
    return clip(text, MAX_VALUE_CHARS)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, marked with the number left out."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


class ConfigError(AgentGymError, ValueError):
    """Raised when a kwarg, option or spec field has a value agentgym cannot use.

    The message names the field, the value and what is allowed, each cut to a bounded length
    (the attributes keep them whole).
    """

    def __init__(self, field: str, value: Any, allowed: str | Iterable[Any]) -> None:
        if not isinstance(allowed, str):
            allowed = ", ".join(short_repr(a) for a in allowed)
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"{clip(str(field), MAX_FIELD_CHARS)}={short_repr(value)} is not allowed; "
                         f"expected {clip(allowed, MAX_ALLOWED_CHARS)}")


class DataError(AgentGymError, ValueError):
    """Raised when a world, query or plan file is missing or cannot be read."""


class ActionTypeError(AgentGymError, TypeError):
    """Raised when ``step()`` receives something other than a ``str``."""


class ResetNeeded(AgentGymError, RuntimeError):
    """Raised when ``step()`` is called before ``reset()`` or after the episode ended."""


class StorageError(AgentGymError, OSError):
    """Raised when a run folder or a cache cannot be written (full disk, permissions, I/O error).

    The message names the path (for a run, how many results are safely on disk); ``errno`` is the
    OS error's.
    """

    def __init__(self, message: str, *, errno: int | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.errno, self.filename = errno, path

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DependencyNotInstalled(AgentGymError, ImportError):
    """Raised when a call needs an optional extra, e.g. ``pip install 'agentgym-rl[hf]'``."""


class RemoteEnvError(AgentGymError):
    """Raised when a call to an env server fails; ``status`` is the HTTP status (None: no reply)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class ServerUnavailable(RemoteEnvError, ConnectionError):
    """Raised when the env server cannot be reached, or stays full (503) or busy for this client (429), after the
    retries."""


class Unauthorized(RemoteEnvError, PermissionError):
    """Raised when the env server rejects the bearer token (401)."""


class SessionNotFound(RemoteEnvError, LookupError):
    """Raised when a session id is unknown to the server: closed, expired, or another client's (404)."""


class WorkerLost(SessionNotFound):
    """Raised when the server's worker process hosting the session died: the session and its env are gone."""


class RequestRejected(RemoteEnvError, ValueError):
    """Raised when the env server refuses a request as too large (413) or malformed (400, 422)."""


class RemoteTimeout(RemoteEnvError, TimeoutError):
    """Raised when an env call outlives the server's or the client's timeout; the session is gone."""


class RetrieverError(AgentGymError, RuntimeError):
    """Raised when a search cannot be carried out: the retriever is down, too slow, failing or sent garbage."""


class JudgeReplyError(AgentGymError, ValueError):
    """Raised by ``parse_score`` when a judge's reply has no usable ``Score: N`` line."""


class EpisodeFailed(AgentGymError, RuntimeError):
    """Raised by a trainer bridge whose target takes failed episodes as exceptions (tinker-cookbook's
    rollout strategies, verifiers' episode errors, skyrl-gym): ``failure`` (a ``core.types.Failure``)
    says what failed outside the model, so the episode is dropped instead of scored 0."""

    def __init__(self, failure: Any) -> None:
        self.failure = failure
        super().__init__(f"{failure.reason}: {failure.message}")


class ModelEndpointError(AgentGymError, RuntimeError):
    """Raised when a chat-completions endpoint fails after the retries or sends an unusable reply.

    ``retryable`` is True for failures that may pass later (429, 5xx, timeouts, dropped
    connections) and False for replies that will not change (other 4xx, malformed bodies).
    """

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        self.status, self.retryable = status, retryable
        super().__init__(message)


class TrainingAborted(AgentGymError, RuntimeError):
    """Raised by a trainer integration (verl's replay buffer, the TRL rollout) when training would
    learn nothing trustworthy: a rollout met a configuration error (the original message is kept),
    or the failure budget is spent, more than ``max_failed_share`` of the recent rollouts left out
    of training (the reasons, their counts and the first error are in the message)."""


def _tree(root: type[BaseException]) -> list[type[BaseException]]:
    """``root`` and its public subclasses in this module, depth first, in the order they are defined."""
    found = [root]
    for sub in root.__subclasses__():
        if sub.__module__ == __name__ and not sub.__name__.startswith("_"):
            found += _tree(sub)
    return found


__all__ = list(dict.fromkeys(cls.__name__ for cls in _tree(AgentGymError)))  # the one list of the error tree
