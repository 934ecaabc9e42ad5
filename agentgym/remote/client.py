"""Envs that run on an env server (``agentgym serve``): ``RemoteEnv`` and ``AsyncRemoteEnv``.

    env = RemoteEnv("http://127.0.0.1:8000", "TravelPlanner-v0", env_kwargs={"action_format": "json"},
                    token="s3cret")                       # a gymnasium.Env: reset, step, close
    async with AsyncRemoteEnv("http://127.0.0.1:8000", "TravelPlanner-v0") as env:
        observation, info = await env.reset(seed=0)

A server only builds what its operator configured: ``preset=`` picks one of its env presets, and
``env_kwargs`` may hold only the options a client may set (seed-free constructor options such as
``action_format`` or ``max_turns``; see ``docs/server.md``); anything else raises ``ConfigError``.
The token defaults to ``$AGENTGYM_REMOTE_TOKEN``, else, for a server on this machine, the token
``agentgym serve`` generated (``agentgym.remote.protocol.default_token_path``).

The same seed and actions give the same observations, rewards and infos as the local env. Each
reset and step carries a sequence number, so a call lost to a dropped connection is retried
without being applied twice. Errors: the env's own (``ConfigError``, ``ResetNeeded``, ...) are
raised again as themselves; the rest are ``RemoteEnvError`` subclasses (see ``agentgym.errors``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import random
import ssl
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import gymnasium

from agentgym.core.spaces import TextSpace
from agentgym.core.turn_cut import RetiredCutNames, TurnCut
from agentgym.errors import (ActionTypeError, RemoteEnvError, RemoteTimeout, RequestRejected, ServerUnavailable,
                             SessionNotFound)
from agentgym.remote._batching import batcher_for
from agentgym.remote._connection import AsyncConnection, ConnectionLost, Endpoint, Reply, SyncConnection
from agentgym.remote.protocol import (API_PREFIX, ResetReply, SessionDescription, StepReply, decode,
                                      default_token_path, encode, error_from_reply)

__all__ = ["RemoteEnv", "AsyncRemoteEnv", "TOKEN_ENV_VAR"]

TOKEN_ENV_VAR = "AGENTGYM_REMOTE_TOKEN"
_BUSY = (429, 503)
"""Statuses retried after their ``Retry-After``: the client's share of a limit, or the server's, is taken."""
"""The bearer token used when none is passed."""


class _Call(NamedTuple):
    method: str
    path: str
    body: bytes | None
    retry_safe: bool
    """Whether resending is harmless even if the server may have acted on the first try."""


class _Session:
    """What the sync and async clients share: building requests, the retry policy, reading replies."""

    def __init__(self, base_url: str, env_id: str, env_kwargs: Mapping[str, Any] | None, token: str | None,
                 retries: int, backoff_s: float, ssl_context: ssl.SSLContext | None,
                 preset: str | None = None) -> None:
        self.base_url, self.env_id, self.env_kwargs = base_url, env_id, dict(env_kwargs or {})
        self.preset = preset
        self.endpoint = Endpoint.parse(base_url, ssl_context)
        token = token if token is not None else os.environ.get(TOKEN_ENV_VAR) or _local_token(self.endpoint)
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.retries, self.backoff_s = retries, backoff_s
        self.description: SessionDescription | None = None
        self.seq = 0
        self.closed = False
        self.abandoned = False
        """Set when a call's outcome is unknown (a client-side timeout, a server that stopped
        answering): the env's state is unknown, so the session is not used again."""

    @property
    def path(self) -> str:
        if self.description is None or self.closed:
            raise SessionNotFound("the remote env is not open (closed, or never opened)")
        if self.abandoned:
            raise SessionNotFound("the session was abandoned after a call whose outcome is unknown (a timeout or "
                                  "a server that stopped answering); open a new remote env")
        return self.session_path

    @property
    def session_path(self) -> str:
        return f"{API_PREFIX}/sessions/{self.description.session_id}"

    def create(self) -> _Call:
        body = {"env_id": self.env_id, "kwargs": self.env_kwargs}
        if self.preset is not None:
            body["preset"] = self.preset
        return _Call("POST", f"{API_PREFIX}/sessions", encode(body), retry_safe=False)

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> _Call:
        self.seq += 1
        return self._sized(_Call("POST", self.path + "/reset",
                                 encode({"seed": seed, "options": options, "seq": self.seq}), retry_safe=True))

    def step(self, action: Any) -> _Call:
        if not isinstance(action, str):
            raise ActionTypeError(f"step() takes the model's text as a str, got {type(action).__name__}")
        self.seq += 1
        return self._sized(_Call("POST", self.path + "/step", encode({"action": action, "seq": self.seq}),
                                 retry_safe=True))

    def delete(self) -> _Call:
        return _Call("DELETE", self.session_path, None, retry_safe=True)

    def _sized(self, call: _Call) -> _Call:
        # Refuse here what the server would refuse: a large body may be cut off by the server's
        # 413 before the client has finished sending it, and then the 413 itself is lost.
        limit = self.description.max_request_bytes if self.description else None
        if limit is not None and call.body is not None and len(call.body) > limit:
            raise RequestRejected(f"RequestTooLarge: the body has {len(call.body)} bytes; the server's limit is "
                                  f"{limit}", status=413)
        return call

    def delay(self, attempt: int, outcome: Reply | ConnectionLost, call: _Call) -> float | None:
        """Seconds to wait before retrying ``call``, or None to give up with ``outcome``."""
        if attempt >= self.retries:
            return None
        backoff = self.backoff_s * 2 ** attempt * (0.5 + random.random() / 2)
        if isinstance(outcome, ConnectionLost):
            return backoff if call.retry_safe or not outcome.maybe_processed else None
        if outcome.status in _BUSY:
            retry_after = outcome.headers.get("retry-after", "")
            return min(float(retry_after), 30.0) if retry_after.isdigit() else backoff
        return None

    def failure(self, outcome: Reply | ConnectionLost) -> Exception:
        if isinstance(outcome, ConnectionLost):
            # Whether the server applied the last call is unknown, so the session cannot go on.
            self.abandoned = self.description is not None
            return ServerUnavailable(f"the env server at {self.base_url} did not answer: {outcome}")
        return error_from_reply(outcome.status, outcome.body)

    def read(self, reply: Reply, model: type[Any]) -> Any:
        if reply.status >= 300:
            raise error_from_reply(reply.status, reply.body)
        try:
            return decode(reply.body, model)
        except ValueError as exc:
            raise RemoteEnvError(f"the env server sent a malformed {model.__name__}: {exc}",
                                 status=reply.status) from None

    def opened(self, reply: Reply) -> SessionDescription:
        self.description = self.read(reply, SessionDescription)
        return self.description

    def timed_out(self, timeout: float) -> RemoteTimeout:
        self.abandoned = self.description is not None
        return RemoteTimeout(f"no reply from {self.base_url} within {timeout:g} s; the session is abandoned")


def _local_token(endpoint: Endpoint) -> str | None:
    """The token ``agentgym serve`` generated for a server on this machine, if this user can read it."""
    try:
        loopback = endpoint.host == "localhost" or ipaddress.ip_address(endpoint.host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        return None
    try:
        return default_token_path(endpoint.port).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _spaces(description: SessionDescription) -> tuple[TextSpace, TextSpace, dict[str, Any], TurnCut]:
    """The action and observation spaces, metadata and turn cut of the env behind the session."""
    return (TextSpace(description.max_action_chars), TextSpace(description.max_observation_chars),
            {"render_modes": list(description.render_modes)}, description.turn_cut)


def _with_render_mode(env_kwargs: Mapping[str, Any] | None, render_mode: str | None) -> dict[str, Any]:
    kwargs = dict(env_kwargs or {})
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    return kwargs


class RemoteEnv(RetiredCutNames, gymnasium.Env[str, str]):
    """A ``gymnasium.Env`` whose env runs on an env server; opening it creates the session.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8000``.
        env_id: a registered env id the server serves.
        env_kwargs: the options a client may set (JSON values): ``max_turns``, ``action_format``,
            ``mode``, ``reward`` (a name the server allows), inline ``queries``/``questions``...
        preset: one of the server's env presets for ``env_id``; default: its first (or the env's defaults).
        token: the bearer token; default ``$AGENTGYM_REMOTE_TOKEN``, else the token a local
            ``agentgym serve`` generated.
        timeout: seconds to wait for any one reply (keep it above the server's request timeout).
        retries: resends after a dropped connection, a full server (503) or a busy share (429), with backoff.
    """

    def __init__(self, base_url: str, env_id: str, *, env_kwargs: Mapping[str, Any] | None = None,
                 token: str | None = None, render_mode: str | None = None, timeout: float = 60.0,
                 retries: int = 3, backoff_s: float = 0.2, ssl_context: ssl.SSLContext | None = None,
                 preset: str | None = None) -> None:
        self._remote = _Session(base_url, env_id, _with_render_mode(env_kwargs, render_mode), token, retries,
                                backoff_s, ssl_context, preset)
        self._timeout = timeout
        self._conn = SyncConnection(self._remote.endpoint, timeout)
        try:
            description = self._remote.opened(self._send(self._remote.create()))
        except BaseException:
            self._conn.close()
            raise
        self.action_space, self.observation_space, self.metadata, self.turn_cut = _spaces(description)
        self.render_mode = render_mode
        self._last_observation = ""

    @property
    def session_id(self) -> str | None:
        return None if self._remote.description is None else self._remote.description.session_id

    @property
    def description(self) -> SessionDescription:
        """What the server said about the session: limits, ``action_format``, tool schemas."""
        return self._remote.description

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)  # keeps np_random in step with the server's seeding, as gymnasium expects
        reply = self._remote.read(self._send(self._remote.reset(seed, options)), ResetReply)
        self._last_observation = reply.observation
        return reply.observation, reply.info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        reply = self._remote.read(self._send(self._remote.step(action)), StepReply)
        self._last_observation = reply.observation
        return reply.observation, reply.reward, reply.terminated, reply.truncated, reply.info

    def render(self) -> str | None:
        return self._last_observation if self.render_mode == "ansi" else None

    def close(self) -> None:
        """Close the session on the server (idempotent; a server that is gone is not an error)."""
        if self._remote.description is not None and not self._remote.closed:
            try:
                self._send(self._remote.delete())
            except (SessionNotFound, ServerUnavailable, RemoteTimeout):
                pass
            self._remote.closed = True
        self._conn.close()

    def __repr__(self) -> str:
        return f"<RemoteEnv {self._remote.env_id} at {self._remote.base_url} session={self.session_id}>"

    def _send(self, call: _Call) -> Reply:
        for attempt in range(self._remote.retries + 1):
            try:
                outcome: Reply | ConnectionLost = self._conn.request(call.method, call.path, call.body,
                                                                      self._remote.headers)
            except TimeoutError:
                raise self._remote.timed_out(self._timeout) from None
            except ConnectionLost as lost:
                outcome = lost
            wait = self._remote.delay(attempt, outcome, call)
            if wait is None:
                break
            time.sleep(wait)
        if isinstance(outcome, ConnectionLost) or outcome.status in _BUSY:
            raise self._remote.failure(outcome)
        return outcome


class AsyncRemoteEnv(RetiredCutNames):
    """The asyncio client: ``await env.reset()``, ``await env.step(action)``, ``await env.close()``.

    Same arguments as ``RemoteEnv``. The session is created by ``await env.open()``, by
    ``async with env``, or by the first ``reset``; ``AsyncRemoteEnv.create(...)`` does both steps.
    ``coalesce=True`` sends the steps that this loop's sessions of the same server make at the
    same moment as one request (``agentgym.remote._batching``): for training, many sessions of fast steps.
    """

    def __init__(self, base_url: str, env_id: str, *, env_kwargs: Mapping[str, Any] | None = None,
                 token: str | None = None, render_mode: str | None = None, timeout: float = 60.0,
                 retries: int = 3, backoff_s: float = 0.2, ssl_context: ssl.SSLContext | None = None,
                 preset: str | None = None, coalesce: bool = False) -> None:
        self._remote = _Session(base_url, env_id, _with_render_mode(env_kwargs, render_mode), token, retries,
                                backoff_s, ssl_context, preset)
        self._timeout, self._coalesce = timeout, coalesce
        self._conn = AsyncConnection(self._remote.endpoint, timeout)
        self.render_mode = render_mode
        self.action_space: TextSpace | None = None
        self.observation_space: TextSpace | None = None
        self.metadata: dict[str, Any] = {}
        self.turn_cut = TurnCut()  # the env's, once the session is open

    @classmethod
    async def create(cls, base_url: str, env_id: str, **options: Any) -> AsyncRemoteEnv:
        env = cls(base_url, env_id, **options)
        await env.open()
        return env

    @property
    def session_id(self) -> str | None:
        return None if self._remote.description is None else self._remote.description.session_id

    @property
    def description(self) -> SessionDescription | None:
        return self._remote.description

    async def open(self) -> SessionDescription:
        """Create the session (once)."""
        if self._remote.description is None:
            description = self._remote.opened(await self._send(self._remote.create()))
            self.action_space, self.observation_space, self.metadata, self.turn_cut = _spaces(description)
        return self._remote.description

    async def reset(self, *, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        await self.open()
        reply = self._remote.read(await self._send(self._remote.reset(seed, options)), ResetReply)
        return reply.observation, reply.info

    async def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        call, outcome = self._remote.step(action), None
        if self._coalesce:
            batcher = batcher_for(self._remote.endpoint, self._remote.headers, self._timeout)
            if batcher.supported:
                outcome = await batcher.submit(self._remote.description.session_id, call.body)
        if outcome is None or outcome.status in _BUSY:  # sent alone, with retries: its seq keeps it once-only
            outcome = await self._send(call)
        reply = self._remote.read(outcome, StepReply)
        return reply.observation, reply.reward, reply.terminated, reply.truncated, reply.info

    async def close(self) -> None:
        if self._remote.description is not None and not self._remote.closed:
            try:
                await self._send(self._remote.delete())
            except (SessionNotFound, ServerUnavailable, RemoteTimeout):
                pass
            self._remote.closed = True
        self._conn.close()

    async def __aenter__(self) -> AsyncRemoteEnv:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AsyncRemoteEnv {self._remote.env_id} at {self._remote.base_url} session={self.session_id}>"

    async def _send(self, call: _Call) -> Reply:
        for attempt in range(self._remote.retries + 1):
            try:
                outcome: Reply | ConnectionLost = await self._conn.request(call.method, call.path, call.body,
                                                                            self._remote.headers)
            except TimeoutError:
                raise self._remote.timed_out(self._timeout) from None
            except ConnectionLost as lost:
                outcome = lost
            wait = self._remote.delay(attempt, outcome, call)
            if wait is None:
                break
            await asyncio.sleep(wait)
        if isinstance(outcome, ConnectionLost) or outcome.status in _BUSY:
            raise self._remote.failure(outcome)
        return outcome
