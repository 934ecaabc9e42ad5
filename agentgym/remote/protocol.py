"""The env server's wire protocol: what the client (``RemoteEnv``) and the server (``agentgym serve``) both speak.

Every route but ``/health`` needs ``Authorization: Bearer <token>`` when the server has tokens.

===========================================  ================================  ======================
route                                        request body                      reply (2xx)
===========================================  ================================  ======================
``POST   /v1/sessions``                      ``CreateSession``                 ``SessionDescription``
``GET    /v1/sessions/{id}``                 -                                 ``SessionDescription``
``POST   /v1/sessions/{id}/reset``           ``ResetRequest``                  ``ResetReply``
``POST   /v1/sessions/{id}/step``            ``StepRequest``                   ``StepReply``
``DELETE /v1/sessions/{id}``                 -                                 ``{"closed": true}``
``GET    /v1/envs``                          -                                 ``{"env_ids": [...]}``
``GET    /health``                           -                                 ``{"status": "ok", ...}``
``GET    /metrics``                          -                                 Prometheus text
===========================================  ================================  ======================

Errors reply ``{"error": {"type": ..., "message": ...}}`` with the status in ``STATUS_OF``.
``seq`` makes reset/step safe to retry: the server applies ``seq == last + 1`` once, answers a
repeated ``seq == last`` with the stored reply, and refuses anything else (409 ``OutOfOrder``).
Bodies are JSON as Python's ``json`` writes it (``NaN`` and ``Infinity`` included), so a float
in ``info`` crosses the wire bit for bit. A server on this machine leaves the token it generated
where its clients look for it (``default_token_path``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentgym import errors
from agentgym.core.turn_cut import RETIRED_NAMES as _RETIRED_CUT_FIELDS, TurnCut

__all__ = [
    "API_PREFIX", "CreateSession", "SessionDescription", "ResetRequest", "StepRequest", "ResetReply",
    "StepReply", "STATUS_OF", "MAX_BATCH", "encode", "decode", "error_body", "error_from_reply", "default_token_path",
]

API_PREFIX = "/v1"
MAX_BATCH = 1024
"""Steps in one ``POST /v1/steps`` batch request."""
_Model = TypeVar("_Model", bound=BaseModel)


class _Request(BaseModel):
    # What a client sends is checked strictly: the server is the trust boundary.
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Reply(BaseModel):
    # What a server sends may carry fields a newer agentgym added; an older client ignores them,
    # so servers and trainers need not be upgraded at the same moment.
    model_config = ConfigDict(frozen=True, extra="ignore")


class CreateSession(_Request):
    env_id: str
    preset: str | None = None
    """One of the operator's presets for ``env_id``; None: the env's first preset (or its defaults)."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    """The options a client may set (the server's ``boundary``), on top of the preset's kwargs."""


class SessionDescription(_Reply):
    session_id: str
    env_id: str
    max_action_chars: int
    max_observation_chars: int
    render_modes: list[str] = Field(default_factory=list)
    action_format: str | None = None
    """The env's ``action_format`` attribute, when it has one."""
    tools: list[dict[str, Any]] | None = None
    """``env.unwrapped.tools.schemas()``: OpenAI function schemas, when the env has tools."""
    turn_cut: TurnCut = TurnCut()
    """The env's ``turn_cut``: where a trainer may stop a model turn, and how the env cuts a finished one."""

    @model_validator(mode="before")
    @classmethod
    def _cut_of_a_0_1_server(cls, data: Any) -> Any:
        # A 0.1 server sent the cut as three fields; read them rather than train on uncut turns.
        if isinstance(data, dict) and "turn_cut" not in data and any(k in data for k in _RETIRED_CUT_FIELDS):
            data = {**data, "turn_cut": {new: data[old] for old, new in _RETIRED_CUT_FIELDS.items() if old in data}}
        return data
    ttl_s: float
    """Idle seconds after which the server closes the session."""
    max_request_bytes: int
    preset: str | None = None
    """The operator's preset the env was built from."""


class ResetRequest(_Request):
    seed: int | None = None
    options: dict[str, Any] | None = None
    seq: int | None = None


class StepRequest(_Request):
    action: str
    seq: int | None = None


class ResetReply(_Reply):
    observation: str
    info: dict[str, Any]


class StepReply(_Reply):
    observation: str
    reward: float | int
    terminated: bool
    truncated: bool
    info: dict[str, Any]


# Error type on the wire -> HTTP status. Env errors keep their class name, so the client raises
# the same exception the env raised on the server.
STATUS_OF = {
    "ConfigError": 400, "DataError": 400, "ActionTypeError": 400, "DependencyNotInstalled": 400,
    "BadRequest": 400, "Unauthorized": 401, "SessionNotFound": 404, "WorkerLost": 404, "ResetNeeded": 409,
    "OutOfOrder": 409, "RequestTimeout": 408, "RequestTooLarge": 413, "InvalidBody": 422, "EnvFailed": 500,
    "TooManyRequests": 429, "ServerFull": 503, "ServerBusy": 503, "Timeout": 504,
}
_ENV_ERRORS = {
    "ConfigError": errors.ConfigError, "DataError": errors.DataError, "ActionTypeError": errors.ActionTypeError,
    "ResetNeeded": errors.ResetNeeded, "DependencyNotInstalled": errors.DependencyNotInstalled,
}
_REMOTE_ERRORS = {
    401: errors.Unauthorized, 404: errors.SessionNotFound, 400: errors.RequestRejected, 408: errors.RequestRejected,
    413: errors.RequestRejected, 422: errors.RequestRejected, 429: errors.ServerUnavailable,
    503: errors.ServerUnavailable,
    504: errors.RemoteTimeout,
}


def encode(payload: Any) -> bytes:
    """JSON bytes as the protocol writes them: UTF-8, compact, NaN allowed.

    Text that is not valid Unicode (a lone surrogate, which envs must accept as model text) is
    sent as ``\\ud800``-style escapes, so it too crosses the wire unchanged.
    """
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=_jsonable)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(payload, ensure_ascii=True, separators=(",", ":"), default=_jsonable).encode()


def decode(body: bytes, model: type[_Model]) -> _Model:
    """Parse and validate a body. Python's ``json`` reads surrogate escapes that pydantic's own
    JSON parser refuses, hence the two steps."""
    return model.model_validate(json.loads(body))


def _jsonable(value: Any) -> Any:
    # numpy scalars and arrays from third-party envs; anything else is an env bug, reported as such.
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def error_body(kind: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"type": kind, "message": message, **details}}


def error_from_reply(status: int, body: bytes) -> Exception:
    """The exception a client raises for an error reply."""
    try:
        error = json.loads(body)["error"]
        kind, message = str(error["type"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        error, kind, message = {}, "", body[:300].decode("utf-8", "replace") or f"HTTP {status}"
    env_error = _ENV_ERRORS.get(kind)
    if env_error is not None:
        return _rebuild(env_error, message, error)
    if kind == "WorkerLost":
        return errors.WorkerLost(f"{kind}: {message}", status=status)
    remote_error = _REMOTE_ERRORS.get(status, errors.RemoteEnvError)
    return remote_error(f"{kind or 'HTTP ' + str(status)}: {message}", status=status)


def _rebuild(cls: type[Exception], message: str, error: dict[str, Any]) -> Exception:
    # Env errors have their own constructors (ConfigError takes field, value, allowed): build the
    # instance around the server's message instead, keeping the fields the server sent.
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    for name in ("field", "value", "allowed"):
        if name in error:
            setattr(exc, name, error[name])
    return exc


def default_token_path(port: int) -> Path:
    """Where ``agentgym serve`` writes the token it generates, and where ``RemoteEnv`` looks for it
    (for a loopback server on ``port``): under ``$AGENTGYM_CACHE_DIR`` (default ``~/.cache/agentgym``)."""
    root = os.environ.get("AGENTGYM_CACHE_DIR") or Path.home() / ".cache" / "agentgym"
    return Path(root) / "server" / f"token-{port}"
