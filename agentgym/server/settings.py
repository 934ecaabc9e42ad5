"""What an env server allows: tokens, env ids, session limits, sizes and timeouts."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ServerSettings", "TOKENS_ENV_VAR", "client_id"]

TOKENS_ENV_VAR = "AGENTGYM_SERVER_TOKENS"
"""Comma-separated bearer tokens, read when ``--token`` is not given (keeps tokens out of ``ps``)."""


class ServerSettings(BaseModel):
    """Limits and access of ``agentgym serve``; every field has a safe default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: tuple[str, ...] = ()
    """Accepted bearer tokens, one per client; a client sees only its own sessions. Empty: no auth."""
    env_ids: tuple[str, ...] | None = None
    """Env ids clients may create; None: every agentgym env id."""
    max_sessions: int = Field(256, ge=1)
    """Open sessions across all clients; creating one more answers 503 until one closes or expires."""
    max_sessions_per_client: int | None = Field(None, ge=1)
    session_ttl_s: float = Field(600.0, gt=0)
    """Idle seconds after which a session is closed and its memory freed."""
    max_request_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    """Larger request bodies are refused with 413."""
    request_timeout_s: float = Field(30.0, gt=0)
    """Longest reset, step or close; a slower call answers 504 and its session is closed."""
    create_timeout_s: float = Field(120.0, gt=0)
    """Longest env construction (the first one may build a world cache)."""
    env_calls: Literal["auto", "inline", "threads"] = "auto"
    """Where reset/step run: ``auto`` inline on the event loop (fastest; SIGALRM enforces the timeout)
    until a session's call takes over ``inline_budget_s``, then in threads; ``inline``; ``threads``
    (for envs whose steps wait on I/O, e.g. a remote retriever). See ``agentgym.server.calls``."""
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
    def sweep_interval_s(self) -> float:
        """How often expired sessions are looked for: a quarter of the TTL, within [0.05, 30] s."""
        return min(max(self.session_ttl_s / 4, 0.05), 30.0)

    @classmethod
    def with_env_tokens(cls, **fields: Any) -> ServerSettings:
        """Settings whose tokens, when not given, come from ``$AGENTGYM_SERVER_TOKENS``."""
        if not fields.get("tokens"):
            fields["tokens"] = tuple(t.strip() for t in os.environ.get(TOKENS_ENV_VAR, "").split(",") if t.strip())
        return cls(**fields)


def client_id(token: str) -> str:
    """A stable, non-secret name for a token's owner (sessions are keyed by it)."""
    return "client-" + hashlib.sha256(token.encode()).hexdigest()[:16]
