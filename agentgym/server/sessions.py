"""The server's sessions: one env each, owned by one client, closed when idle past the TTL.

The pool is plain synchronous bookkeeping run on the event loop thread; the env calls
themselves run in the server's worker processes (or threads). Time comes from an injectable clock so that TTL
eviction is tested without sleeping.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentgym.server._signals import PoolFull
from agentgym.server.config import ServerConfig

__all__ = ["Session", "SessionPool"]


@dataclass(eq=False)
class Session:
    id: str
    owner: str
    env_id: str
    env: Any
    """The env (calls in this process), or None (it lives in a worker process, under the session's id)."""
    description: dict[str, Any]
    last_used: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Serializes a session's calls: an env is not thread safe, and retries must see the last reply."""
    seq: int = 0
    """The ``seq`` of the last reset/step applied."""
    last_reply: tuple[int, bytes] | None = None
    """Status and body of that call, replayed when the client retries it."""
    in_flight: int = 0
    inline: bool = True
    """Whether its calls may run on the event loop (see ``agentgym.server.calls``)."""


class SessionPool:
    """Sessions by id, with the server and per-client limits and idle expiry."""

    def __init__(self, config: ServerConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config, self.clock = config, clock
        self._sessions: dict[str, Session] = {}
        self._owned: Counter[str] = Counter()
        self._reserved: Counter[str] = Counter()  # creations under way: they count against the limits

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session: object) -> bool:
        return isinstance(session, Session) and self._sessions.get(session.id) is session

    def reserve(self, owner: str) -> list[Session]:
        """Hold a slot for a session ``owner`` is creating; returns sessions expired to make room.

        Raises ``PoolFull`` when no slot is free even after expiring idle sessions.
        """
        evicted: list[Session] = []
        if not self._has_room(owner):
            evicted = self.expire()
        if not self._has_room(owner):
            per_client = self.config.per_client_limit
            if self._owned[owner] + self._reserved[owner] >= per_client:
                raise PoolFull("client", per_client)
            raise PoolFull("server", self.config.max_sessions)
        self._reserved[owner] += 1
        return evicted

    def release(self, owner: str) -> None:
        """Give back a slot whose creation failed (or succeeded: ``add`` then owns it)."""
        self._reserved[owner] -= 1
        if self._reserved[owner] <= 0:
            del self._reserved[owner]

    def add(self, owner: str, env_id: str, env: Any, describe: Callable[[str], dict[str, Any]],
            session_id: str | None = None) -> Session:
        """Register a created env under ``session_id`` (default: a fresh unguessable id); consumes the
        reservation."""
        session_id = session_id or secrets.token_urlsafe(18)
        session = Session(session_id, owner, env_id, env, describe(session_id), self.clock())
        self._sessions[session_id] = session
        self._owned[owner] += 1
        self.release(owner)
        return session

    def get(self, owner: str, session_id: str) -> Session | None:
        """The session, or None when it does not exist or belongs to another client."""
        session = self._sessions.get(session_id)
        if session is None or session.owner != owner:
            return None
        session.last_used = self.clock()
        return session

    def by_id(self, session_id: str) -> Session | None:
        """The session, whoever owns it (for the server's own bookkeeping, never for a request)."""
        return self._sessions.get(session_id)

    def remove(self, session: Session) -> bool:
        """Forget the session; False when it was already gone."""
        if self._sessions.pop(session.id, None) is None:
            return False
        self._owned[session.owner] -= 1
        if self._owned[session.owner] <= 0:
            del self._owned[session.owner]
        return True

    def expire(self) -> list[Session]:
        """Remove and return the sessions idle longer than the TTL (never one with a call under way)."""
        deadline = self.clock() - self.config.session_ttl_s
        stale = [s for s in self._sessions.values() if s.last_used < deadline and not s.in_flight]
        for session in stale:
            self.remove(session)
        return stale

    def all(self) -> list[Session]:
        return list(self._sessions.values())

    def _has_room(self, owner: str) -> bool:
        total = len(self._sessions) + sum(self._reserved.values())
        if total >= self.config.max_sessions:
            return False
        return self._owned[owner] + self._reserved[owner] < self.config.per_client_limit
