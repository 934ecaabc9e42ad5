"""What an env server allows (``ServerConfig``): tokens, env ids, session limits, sizes and timeouts."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import Field, field_validator

from agentgym._deprecated import RenamedKeys
from agentgym._settings import Settings
from agentgym.server.presets import Presets

__all__ = ["ServerConfig", "TOKENS_ENV_VAR", "client_id", "takes_config"]

_Function = TypeVar("_Function", bound=Callable[..., Any])
_SETTINGS_KEYWORD = RenamedKeys("agentgym.server keyword", {"settings": "config"})

TOKENS_ENV_VAR = "AGENTGYM_SERVER_TOKENS"
"""Comma-separated bearer tokens, read when ``--token`` is not given (keeps tokens out of ``ps``)."""


class ServerConfig(Settings):
    """Limits and access of ``agentgym serve``; every field has a safe default (a bad value raises
    ``ConfigError`` naming the field)."""

    tokens: tuple[str, ...] = ()
    """Accepted bearer tokens, one per client; a client sees only its own sessions. Empty: refused
    unless ``insecure_no_auth`` (``agentgym serve`` generates one when none is configured)."""
    insecure_no_auth: bool = False
    """Serve without tokens: any process that can connect may run envs."""
    env_ids: tuple[str, ...] | None = None
    """Env ids clients may create; None: those of the presets, else every agentgym env id."""
    presets: Presets = Field(default_factory=Presets)
    """The operator's env presets, reward specs and allowed reward presets (``agentgym.server.presets``)."""
    trust_clients: bool = False
    """Let clients pass any constructor kwargs (paths, URLs, reward specs): only for clients you would
    give a shell on this machine. Default: clients set only the bounded options of ``boundary``."""
    imports: tuple[str, ...] = ()
    """Modules the env workers import first (those that register your own envs)."""
    max_sessions: int = Field(256, ge=1)
    """Open sessions across all clients; creating one more answers 503 until one closes or expires."""
    max_sessions_per_client: int | None = Field(None, ge=1)
    """Open sessions per token; None: an equal share of ``max_sessions`` (all of it for one token)."""
    session_ttl_s: float = Field(600.0, gt=0)
    """Idle seconds after which a session is closed and its memory freed."""
    max_request_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    """Larger request bodies are refused with 413."""
    max_body_bytes_in_flight: int = Field(16 * 1024 * 1024, ge=1024)
    """Bytes of large request bodies (over 64 KiB) received and held across all connections at once,
    reserved as they arrive; a body past it waits up to a second for room, then answers 503
    ``ServerBusy`` (the client retries). Smaller bodies, such as steps, never wait for it. A body
    larger than the whole budget still fits alone."""
    max_body_bytes_in_flight_per_client: int | None = Field(None, ge=1024)
    """Declared bytes of one token's large bodies in flight at once, claimed before a body is read; past
    it a body waits up to a second, then answers 429 ``TooManyRequests``. None: ``max_request_bytes``
    (one largest body at a time), at most ``max_body_bytes_in_flight``."""
    body_timeout_s: float = Field(15.0, gt=0)
    """A request's body must arrive within this long of its headers (slow-body clients get 408)."""
    min_body_bytes_per_s: int = Field(32 * 1024, ge=1)
    """A body must keep this pace: each block of this many bytes within a second of the last (or the
    body's end), else 408; a client dripping a declared 8 MB is cut off within a second."""
    request_timeout_s: float = Field(30.0, gt=0)
    """Longest reset, step or close; a slower call answers 504 and its session is closed."""
    create_timeout_s: float = Field(120.0, gt=0)
    """Longest env construction (the first one may build a world cache)."""
    env_calls: Literal["processes", "auto", "inline", "threads"] = "processes"
    """Where env calls run: ``processes`` (default) in ``env_workers`` worker processes, so no call can
    stall the event loop or the other workers' sessions (``agentgym.server.worker_pool``). In this
    process, for trusted single-user setups: ``auto`` inline on the event loop (SIGALRM enforces the
    timeout) until a session's call takes over ``inline_budget_s``, then in threads; ``inline``;
    ``threads``. See ``agentgym.server.calls``."""
    env_workers: int = Field(default_factory=lambda: max(2, min(8, os.cpu_count() or 2)), ge=1)
    """Worker processes for ``env_calls="processes"``; sessions are spread over them."""
    header_timeout_s: float = Field(10.0, gt=0)
    """A connection must send a request's headers within this long (slow-header clients are cut off)."""
    inline_budget_s: float = Field(0.02, gt=0)
    env_threads: int = Field(8, ge=1)
    """Threads for env creation, closing, and the calls that do not run inline."""

    @field_validator("tokens")
    @classmethod
    def _tokens_not_blank(cls, tokens: tuple[str, ...]) -> tuple[str, ...]:
        if any(not t.strip() for t in tokens):
            raise ValueError("a token must not be blank")
        return tokens

    @property
    def per_client_limit(self) -> int:
        """Open sessions one token may hold."""
        if self.max_sessions_per_client is not None:
            return self.max_sessions_per_client
        return max(1, self.max_sessions // max(1, len(self.tokens)))

    @property
    def body_share(self) -> int:
        """Declared bytes of large bodies one token may have in flight."""
        if self.max_body_bytes_in_flight_per_client is not None:
            return self.max_body_bytes_in_flight_per_client
        return min(self.max_request_bytes, self.max_body_bytes_in_flight)

    @property
    def sweep_interval_s(self) -> float:
        """How often expired sessions are looked for: a quarter of the TTL, within [0.05, 30] s."""
        return min(max(self.session_ttl_s / 4, 0.05), 30.0)

    @classmethod
    def with_env_tokens(cls, **fields: Any) -> ServerConfig:
        """A config whose tokens, when not given, come from ``$AGENTGYM_SERVER_TOKENS``."""
        if not fields.get("tokens"):
            fields["tokens"] = tuple(t.strip() for t in os.environ.get(TOKENS_ENV_VAR, "").split(",") if t.strip())
        return cls(**fields)


def client_id(token: str) -> str:
    """A stable, non-secret name for a token's owner (sessions are keyed by it)."""
    return "client-" + hashlib.sha256(token.encode()).hexdigest()[:16]


def takes_config(function: _Function) -> _Function:
    """``function`` also callable with ``settings=`` (its ``config`` argument's old keyword), with a warning."""

    @functools.wraps(function)
    def called(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **_SETTINGS_KEYWORD.apply(kwargs))

    return called  # type: ignore[return-value]
