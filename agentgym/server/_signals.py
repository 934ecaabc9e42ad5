"""The server's internal signals: raised and caught inside ``agentgym.server``, never seen by a client.

    ApiError        an error reply to send (its wire ``kind`` decides the status); the doors answer it
    PoolFull        no slot for another session (the core answers ``ServerFull``)
    CallTimedOut    an env call outlived its deadline (the core closes the session: ``Timeout``)
    WorkerDied      the worker process hosting a session died or was killed (the core: ``WorkerLost``)
    Interrupted     the alarm stopped a call at its deadline (a BaseException: env code cannot swallow it)

A client sees only the wire's error kinds and the exceptions ``agentgym.errors`` rebuilds from them
(``WorkerDied`` becomes the client's ``agentgym.errors.WorkerLost``).
"""

from __future__ import annotations

import json
from typing import Any

from agentgym.remote.protocol import STATUS_OF, encode, error_body, error_from_reply

__all__ = ["ApiError", "PoolFull", "CallTimedOut", "WorkerDied", "Interrupted"]


class ApiError(Exception):
    """An error reply: its wire ``kind`` decides the status (``protocol.STATUS_OF``)."""

    def __init__(self, kind: str, message: str, *, headers: dict[str, str] | None = None, **details: Any) -> None:
        self.kind, self.message, self.headers, self.details = kind, message, headers, details
        super().__init__(message)

    @classmethod
    def of_reply(cls, body: bytes) -> ApiError:
        """The error an error reply's body carries (``{"error": {"type", "message", ...}}``)."""
        try:
            error = dict(json.loads(body)["error"])
            kind, message = str(error.pop("type")), str(error.pop("message"))
        except (ValueError, KeyError, TypeError):
            return cls("EnvFailed", bytes(body[:300]).decode("utf-8", "replace"))
        return cls(kind, message, **error) if kind in STATUS_OF else cls("EnvFailed", f"{kind}: {message}")

    @property
    def status(self) -> int:
        return STATUS_OF[self.kind]

    def body(self) -> bytes:
        return encode(error_body(self.kind, self.message, **self.details))

    def client_error(self) -> Exception:
        """The exception a client raises for this reply (``ConfigError``, ``ServerUnavailable``...)."""
        return error_from_reply(self.status, self.body())


class PoolFull(Exception):
    """No room for another session (``scope`` is ``server`` or ``client``)."""

    def __init__(self, scope: str, limit: int) -> None:
        self.scope, self.limit = scope, limit
        super().__init__(f"the {scope} limit of {limit} open sessions is reached; close one or wait for "
                         "idle ones to expire")


class CallTimedOut(Exception):
    """The env call outlived its deadline. ``stopped``: how it was stopped (``interrupted``: at its
    deadline, the env's state unknown; ``killed``: with its worker process), or None: its thread runs on."""

    def __init__(self, timeout: float, *, stopped: str | None = None) -> None:
        self.stopped = stopped
        super().__init__(f"the env call took longer than {timeout:g} s")


class WorkerDied(Exception):
    """The worker process hosting the call's session died, was killed, or failed to start."""


class Interrupted(BaseException):
    """The call reached its deadline. A BaseException, so env code catching Exception does not
    swallow it."""
