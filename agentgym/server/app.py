"""The env server: any registered agentgym env behind a small JSON API (see ``protocol``).

    app = create_app(ServerSettings(tokens=("s3cret",)))   # a Starlette app; uvicorn serves it

Every env call runs under a deadline, inline on the event loop or in a thread pool
(``agentgym.server.calls``), so one slow or stuck env never holds up the others for long; a
session's calls are serialized by its lock. Sessions idle past the TTL are closed by a sweeper
task that runs while the app's lifespan is up. ``docs/server.md`` describes the whole protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import gymnasium
from pydantic import BaseModel, ValidationError

from agentgym import __version__, errors
from agentgym.core.registration import ENV_IDS
from agentgym.errors import DependencyNotInstalled
from agentgym.server.calls import CallTimedOut, EnvCalls
from agentgym.server.metrics import ServerMetrics
from agentgym.server.protocol import (API_PREFIX, STATUS_OF, CreateSession, ResetRequest, StepRequest, decode,
                                      encode, error_body)
from agentgym.server.sessions import PoolFull, Session, SessionPool
from agentgym.server.settings import ServerSettings, client_id

try:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route
except ImportError:  # pragma: no cover - the message is the point
    raise DependencyNotInstalled("the env server needs starlette and uvicorn: pip install 'agentgym[server]'") from None

__all__ = ["create_app", "EnvServer"]

log = logging.getLogger("agentgym.server")
_ANONYMOUS = "anonymous"
_COLLECT_EVERY_S = 10.0
_MAKE_LOCK = threading.Lock()
_PASSED_THROUGH = ("ConfigError", "DataError", "ActionTypeError", "ResetNeeded", "DependencyNotInstalled")


class ApiError(Exception):
    """An error reply: its wire ``kind`` decides the status (``protocol.STATUS_OF``)."""

    def __init__(self, kind: str, message: str, *, headers: dict[str, str] | None = None, **details: Any) -> None:
        self.kind, self.message, self.headers, self.details = kind, message, headers, details
        super().__init__(message)

    def response(self) -> Response:
        return _json(STATUS_OF[self.kind], encode(error_body(self.kind, self.message, **self.details)), self.headers)


class EnvServer:
    """The state behind the routes: settings, sessions, metrics and the env threads."""

    def __init__(self, settings: ServerSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings, self.clock = settings, clock
        self.pool = SessionPool(settings, clock)
        self.metrics = ServerMetrics()
        self.env_ids = tuple(settings.env_ids or ENV_IDS)
        self._owners = {hashlib.sha256(t.encode()).digest(): client_id(t) for t in settings.tokens}
        self.calls = EnvCalls(settings.env_calls, settings.env_threads, settings.inline_budget_s)
        self._started = clock()

    # -- routes ------------------------------------------------------------------------------
    def routes(self) -> list[Route]:
        sessions = f"{API_PREFIX}/sessions"
        table = [  # the hot routes first: the router tries them in order
            ("step", sessions + "/{session_id}/step", "POST", self.step),
            ("reset", sessions + "/{session_id}/reset", "POST", self.reset),
            ("create", sessions, "POST", self.create),
            ("describe", sessions + "/{session_id}", "GET", self.describe),
            ("close", sessions + "/{session_id}", "DELETE", self.close),
            ("envs", f"{API_PREFIX}/envs", "GET", self.list_envs),
            ("health", "/health", "GET", self.health), ("metrics", "/metrics", "GET", self.metrics_text),
        ]
        return [Route(path, self._measured(name, handler), methods=[method]) for name, path, method, handler in table]

    async def health(self, request: Request) -> Response:
        return _json(200, encode({"status": "ok", "version": __version__, "sessions": len(self.pool),
                                  "max_sessions": self.settings.max_sessions,
                                  "uptime_s": round(self.clock() - self._started, 3)}))

    async def metrics_text(self, request: Request) -> Response:
        self._owner(request)
        return PlainTextResponse(self.metrics.render(len(self.pool), self.settings.max_sessions),
                                 media_type="text/plain; version=0.0.4")

    async def list_envs(self, request: Request) -> Response:
        self._owner(request)
        return _json(200, encode({"env_ids": list(self.env_ids)}))

    async def create(self, request: Request) -> Response:
        owner = self._owner(request)
        body = await self._read(request, CreateSession)
        if body.env_id not in self.env_ids:
            raise ApiError("ConfigError", f"env_id={body.env_id!r} is not served here; expected one of "
                           f"{', '.join(self.env_ids)}", field="env_id", value=body.env_id, allowed=list(self.env_ids))
        try:
            self._close_all(self.pool.reserve(owner), "ttl")
        except PoolFull as full:
            raise ApiError("ServerFull", str(full), headers={"Retry-After": "1"}) from None
        try:
            (env, description), _ = await self.calls.run(self.settings.create_timeout_s, _make_env, body.env_id,
                                                         body.kwargs, self.settings, on_late=_close_made_env)
        except CallTimedOut as exc:
            self.pool.release(owner)
            raise ApiError("Timeout", f"creating the env: {exc}") from None
        except BaseException:
            self.pool.release(owner)
            raise
        session = self.pool.add(owner, body.env_id, env, lambda sid: {**description, "session_id": sid})
        self.metrics.sessions_created += 1
        return _json(201, encode(session.description))

    async def describe(self, request: Request) -> Response:
        return _json(200, encode(self._session(request).description))

    async def reset(self, request: Request) -> Response:
        session = self._session(request)
        body = await self._read(request, ResetRequest)
        self.metrics.resets += 1
        return await self._apply(session, body.seq, _reset_reply, body.seed, body.options)

    async def step(self, request: Request) -> Response:
        session = self._session(request)
        body = await self._read(request, StepRequest)
        self.metrics.steps += 1
        return await self._apply(session, body.seq, _step_reply, body.action)

    async def close(self, request: Request) -> Response:
        session = self._session(request)
        if self.pool.remove(session):
            self.metrics.sessions_closed["client"] += 1
            async with session.lock:  # let a call under way finish before the env goes
                try:
                    await self.calls.run(self.settings.request_timeout_s, _close_quietly, session.env)
                except CallTimedOut:
                    pass  # the session is gone either way; its thread finishes the close
        return _json(200, encode({"closed": True}))

    # -- lifecycle ---------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(self._sweep_forever())
        try:
            yield
        finally:
            sweeper.cancel()
            for session in self.pool.all():
                self.pool.remove(session)
                self.metrics.sessions_closed["shutdown"] += 1
                _close_quietly(session.env)
            self.calls.shutdown()

    def sweep(self) -> int:
        """Close the sessions idle past the TTL now; returns how many."""
        expired = self.pool.expire()
        self._close_all(expired, "ttl")
        return len(expired)

    async def _sweep_forever(self) -> None:
        garbage, last_collect = False, 0.0
        while True:
            await asyncio.sleep(self.settings.sweep_interval_s)
            if garbage and time.monotonic() - last_collect >= _COLLECT_EVERY_S:
                # Envs hold reference cycles: free the ones the last sweep closed now, not at some
                # later full collection (at most every few seconds: a full collection pauses the loop).
                gc.collect()
                garbage, last_collect = False, time.monotonic()
            try:
                garbage = self.sweep() > 0 or garbage
            except Exception:  # the sweeper must outlive any one bad env
                log.exception("session sweep failed")

    def _close_all(self, sessions: list[Session], reason: str) -> None:
        for session in sessions:
            self.metrics.sessions_closed[reason] += 1
            self.calls.background(_close_quietly, session.env)

    # -- plumbing ----------------------------------------------------------------------------
    def _measured(self, name: str, handler: Callable[[Request], Awaitable[Response]]) -> Callable:
        async def endpoint(request: Request) -> Response:
            start = time.perf_counter()
            try:
                response = await handler(request)
            except ApiError as exc:
                response = exc.response()
            except Exception as exc:  # a server bug: report it, keep serving
                log.exception("%s failed", name)
                response = ApiError("EnvFailed", f"internal error: {type(exc).__name__}: {exc}").response()
            self.metrics.observe(name, response.status_code, time.perf_counter() - start)
            return response

        return endpoint

    def _owner(self, request: Request) -> str:
        if not self._owners:
            return _ANONYMOUS
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        digest = hashlib.sha256(token.strip().encode()).digest()
        owner = self._owners.get(digest) if scheme.lower() == "bearer" else None
        if owner is None:
            raise ApiError("Unauthorized", "a valid 'Authorization: Bearer <token>' header is required",
                           headers={"WWW-Authenticate": "Bearer"})
        return owner

    def _session(self, request: Request) -> Session:
        session = self.pool.get(self._owner(request), request.path_params["session_id"])
        if session is None:  # unknown, expired and other clients' sessions look the same
            raise ApiError("SessionNotFound", "no such session: it was closed, expired after "
                           f"{self.settings.session_ttl_s:g} s idle, or never existed")
        return session

    async def _read(self, request: Request, model: type[BaseModel]) -> Any:
        body = await _read_limited(request, self.settings.max_request_bytes)
        try:
            return decode(body, model)
        except ValueError as exc:  # not JSON (json.JSONDecodeError, UnicodeDecodeError) or not the model
            if not isinstance(exc, ValidationError):
                raise ApiError("InvalidBody", f"the body is not JSON: {exc}") from None
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5])
            raise ApiError("InvalidBody", f"the body is not a valid {model.__name__}: {problems}") from None

    async def _apply(self, session: Session, seq: int | None, job: Callable[..., tuple[int, bytes]],
                     *args: Any) -> Response:
        session.in_flight += 1
        try:
            async with session.lock:
                if session not in self.pool:
                    raise ApiError("SessionNotFound", "the session was closed while this call waited")
                if seq is not None and seq == session.seq and session.last_reply is not None:
                    self.metrics.replayed += 1
                    return _json(*session.last_reply)
                if seq is not None and seq != session.seq + 1:
                    raise ApiError("OutOfOrder", f"seq {seq} is out of order: the last call applied was "
                                   f"{session.seq}, so the next must be {session.seq + 1}")
                reply = await self._call(session, job, *args)
                if seq is not None:
                    session.seq, session.last_reply = seq, reply
                return _json(*reply)
        finally:
            session.in_flight -= 1
            session.last_used = self.clock()

    def _drop(self, session: Session, reason: str) -> None:
        if self.pool.remove(session):
            self.metrics.sessions_closed[reason] += 1

    async def _call(self, session: Session, job: Callable[..., tuple[int, bytes]], *args: Any) -> tuple[int, bytes]:
        try:
            reply, seconds = await self.calls.run(self.settings.request_timeout_s, job, session.env, *args,
                                                  inline=session.inline, on_late=lambda _: _close_quietly(session.env))
        except CallTimedOut as exc:
            self._drop(session, "timeout")
            if exc.interrupted:  # stopped mid-call: the env is in an unknown state, close it now
                self.calls.background(_close_quietly, session.env)
            raise ApiError("Timeout", f"{exc}; the session is closed") from None
        if session.inline and not self.calls.stays_inline(seconds):
            session.inline = False  # a slow env (I/O, heavy work): keep it off the event loop from now on
        return reply


def create_app(settings: ServerSettings | None = None, *, clock: Callable[[], float] = time.monotonic) -> Starlette:
    """The env server as a Starlette app; ``app.state.server`` is its ``EnvServer``."""
    server = EnvServer(settings or ServerSettings(), clock)
    app = Starlette(routes=server.routes(), lifespan=server.lifespan)
    app.state.server = server
    return app


# -- env jobs: these run in the env threads -----------------------------------------------------
def _make_env(env_id: str, kwargs: dict[str, Any], settings: ServerSettings) -> tuple[Any, dict[str, Any]]:
    try:
        with _MAKE_LOCK:  # one construction at a time: see agentgym.agents.base.in_env_thread for why
            env = gymnasium.make(env_id, **kwargs)
    except Exception as exc:
        kind, message, details = _env_error(exc)
        raise ApiError(kind, message, **details) from None
    act, obs = env.action_space, env.observation_space
    if not (hasattr(act, "max_length") and hasattr(obs, "max_length")):
        _close_quietly(env)
        raise ApiError("ConfigError", f"{env_id} is not a text env (its spaces are {act} and {obs})")
    unwrapped = env.unwrapped
    tools = getattr(unwrapped, "tools", None)
    description = {
        "env_id": env_id, "max_action_chars": act.max_length, "max_observation_chars": obs.max_length,
        "render_modes": list(env.metadata.get("render_modes", [])),
        "action_format": getattr(unwrapped, "action_format", None),
        "tools": tools.schemas() if hasattr(tools, "schemas") else None,
        "ttl_s": settings.session_ttl_s, "max_request_bytes": settings.max_request_bytes,
    }
    return env, description


def _reset_reply(env: Any, seed: int | None, options: dict[str, Any] | None) -> tuple[int, bytes]:
    try:
        observation, info = env.reset(seed=seed, options=options)
        return 200, encode({"observation": observation, "info": info})
    except Exception as exc:
        return _error_reply(exc)


def _step_reply(env: Any, action: str) -> tuple[int, bytes]:
    try:
        observation, reward, terminated, truncated, info = env.step(action)
        return 200, encode({"observation": observation, "reward": reward, "terminated": bool(terminated),
                            "truncated": bool(truncated), "info": info})
    except Exception as exc:
        return _error_reply(exc)


def _error_reply(exc: Exception) -> tuple[int, bytes]:
    kind, message, details = _env_error(exc)
    return STATUS_OF[kind], encode(error_body(kind, message, **details))


def _env_error(exc: Exception) -> tuple[str, str, dict[str, Any]]:
    for name in _PASSED_THROUGH:
        if isinstance(exc, getattr(errors, name)):
            details = {k: _plain(getattr(exc, k)) for k in ("field", "value", "allowed") if hasattr(exc, k)}
            return name, str(exc), details
    if isinstance(exc, gymnasium.error.ResetNeeded):  # gymnasium's OrderEnforcing: step before reset
        return "ResetNeeded", str(exc), {}
    if isinstance(exc, gymnasium.error.Error):  # e.g. an unknown env id
        return "ConfigError", f"{type(exc).__name__}: {exc}", {}
    if isinstance(exc, TypeError) and "argument" in str(exc):  # an unexpected constructor kwarg
        return "ConfigError", f"TypeError: {exc}", {}
    return "EnvFailed", f"{type(exc).__name__}: {exc}", {}


def _plain(value: Any) -> Any:
    try:
        encode(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def _close_made_env(done: asyncio.Future) -> None:
    if not done.cancelled() and done.exception() is None:
        _close_quietly(done.result()[0])


def _close_quietly(env: Any) -> None:
    try:
        env.close()
    except Exception:  # closing is best effort: the session is gone either way
        log.warning("closing an env failed", exc_info=True)


async def _read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError("BadRequest", "Content-Length is not a number")
        if int(declared) > limit:
            raise ApiError("RequestTooLarge", f"the body has {declared} bytes; the limit is {limit}")
        return await request.body()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError("RequestTooLarge", f"the body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _json(status: int, body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status_code=status, headers=headers, media_type="application/json")
