"""The env server: any registered agentgym env behind a small JSON API (see ``agentgym.remote.protocol``).

    app = create_app(ServerConfig(tokens=("s3cret",)))   # a Starlette app; uvicorn serves it

A create request is checked against the operator's presets and the client allowlist
(``agentgym.server.boundary``) before anything is built. Every env call runs under a deadline in a
worker process (``agentgym.server.worker_pool``; or, if the operator asks, inline or in threads:
``agentgym.server.calls``), so one slow or stuck env never holds up the event loop; a session's
calls are serialized by its lock. Sessions idle past the TTL are closed by a sweeper task that
runs while the app's lifespan is up. ``docs/server.md`` describes the whole protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import gymnasium
from pydantic import BaseModel, ValidationError

from agentgym import __version__
from agentgym.errors import ConfigError, DependencyNotInstalled
from agentgym.registration import ENV_IDS
from agentgym.remote.protocol import API_PREFIX, MAX_BATCH, CreateSession, ResetRequest, StepRequest, decode, encode
from agentgym.server._fast import peek_step, read_batch, read_step
from agentgym.server.boundary import ClientBoundary
from agentgym.server.budget import BodyBudget, read_body
from agentgym.server.calls import _CallTimedOut, EnvCalls
from agentgym.server.config import ServerConfig, client_id, takes_config
from agentgym.server.jobs import (_ApiError, close_quietly, env_error, error_reply, make_env, reset_reply, step_reply,
                                  tasks_reply)
from agentgym.server.metrics import ServerMetrics
from agentgym.server.sessions import _PoolFull, Session, SessionPool
from agentgym.server.worker_pool import _CallOverran, _WorkerLost, WorkerPool

try:
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route
except ImportError:  # pragma: no cover - the message is the point
    raise DependencyNotInstalled("the env server needs starlette and uvicorn: pip install 'agentgym-rl[server]'") from None

__all__ = ["create_app", "EnvServer"]

log = logging.getLogger("agentgym.server")
_ANONYMOUS = "anonymous"
_COLLECT_EVERY_S = 10.0
_JOBS = {"reset": reset_reply, "step": step_reply, "tasks": tasks_reply}  # an op's job, when env calls run here
_CLOSES = frozenset({"Unauthorized", "BadRequest", "RequestTooLarge", "RequestTimeout", "ServerBusy",
                     "TooManyRequests"})


class EnvServer:
    """The state behind the routes: config, sessions, metrics, and where env calls run."""

    @takes_config
    def __init__(self, config: ServerConfig, clock: Callable[[], float] = time.monotonic) -> None:
        if not config.tokens and not config.insecure_no_auth:
            raise ConfigError("tokens", (), "at least one token, or insecure_no_auth=True to let any process "
                              "that can connect run envs")
        self.config, self.clock = config, clock
        self.pool = SessionPool(config, clock)
        self.metrics = ServerMetrics()
        served = config.env_ids or tuple(dict.fromkeys(p.env_id for p in config.presets.presets)) or ENV_IDS
        self.boundary = ClientBoundary(config.presets, served, trust_clients=config.trust_clients)
        self.env_ids = self.boundary.env_ids
        self._owners = {hashlib.sha256(t.encode()).digest(): client_id(t) for t in config.tokens}
        in_process = config.env_calls if config.env_calls != "processes" else "threads"
        self.calls = EnvCalls(in_process, config.env_threads, config.inline_budget_s)
        self.workers: WorkerPool | None = None
        if config.env_calls == "processes":
            self.workers = WorkerPool(config.env_workers, _worker_imports(config, self.env_ids))
            self.workers.on_lost = self._lost
        self.budget = BodyBudget(config.max_body_bytes_in_flight, config.body_share)
        self._lost_keys: OrderedDict[str, None] = OrderedDict()  # sessions whose worker died (bounded)
        self._started = clock()

    # -- routes ------------------------------------------------------------------------------
    def routes(self) -> list[Route]:
        sessions = f"{API_PREFIX}/sessions"
        table = [  # the hot routes first: the router tries them in order
            ("step", sessions + "/{session_id}/step", "POST", self.step),
            ("steps", f"{API_PREFIX}/steps", "POST", self.steps),
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
                                  "max_sessions": self.config.max_sessions,
                                  "uptime_s": round(self.clock() - self._started, 3)}))

    async def metrics_text(self, request: Request) -> Response:
        self._owner(request)
        return PlainTextResponse(self.metrics.render(len(self.pool), self.config.max_sessions),
                                 media_type="text/plain; version=0.0.4")

    async def list_envs(self, request: Request) -> Response:
        self._owner(request)
        presets = {env_id: self.boundary.preset_names(env_id) for env_id in self.env_ids}
        return _json(200, encode({"env_ids": list(self.env_ids), "presets": presets,
                                  "rewards": list(self.boundary.reward_names)}))

    async def create(self, request: Request) -> Response:
        owner = self._owner(request)
        body = await self._read(request, CreateSession)
        session = await self.open_session(owner, body.env_id, body.preset, body.kwargs)
        return _json(201, encode(session.description))

    async def describe(self, request: Request) -> Response:
        return _json(200, encode(self._session(request).description))

    async def reset(self, request: Request) -> Response:
        session = self._session(request)
        body = await self._read(request, ResetRequest)
        return _json(*await self.reset_session(session, body.seed, body.options, body.seq))

    async def step(self, request: Request) -> Response:
        session = self._session(request)  # before the body: a stranger's is never read
        return _json(*await self._step_body(session, await self._body(request)))

    async def steps(self, request: Request) -> Response:
        """Many sessions' steps in one request (``AsyncRemoteEnv`` coalesces concurrent steps into one):
        ``[{"session_id", "step": <a step body>}]`` -> ``[[status, <its reply>], ...]``, in order."""
        owner = self._owner(request)
        items = read_batch(await self._body(request))
        if items is None:
            raise _ApiError("InvalidBody", 'the body is not a batch: [{"session_id": str, "step": {"action": str, '
                           '"seq": int}}, ...]')
        if len(items) > MAX_BATCH:
            raise _ApiError("InvalidBody", f"the batch has {len(items)} steps; the limit is {MAX_BATCH}")
        replies = await asyncio.gather(*(self._step_one(owner, session_id, body) for session_id, body in items))
        return _json(200, b"[" + b",".join(b"[%d,%s]" % (status, body) for status, body in replies) + b"]")

    async def _step_one(self, owner: str, session_id: str, body: bytes) -> tuple[int, bytes]:
        try:
            return await self._step_body(self._owned(owner, session_id), body)
        except _ApiError as exc:
            return exc.status, exc.body()

    async def _step_body(self, session: Session, body: bytes) -> tuple[int, bytes]:
        if self.workers is not None and (peeked := peek_step(body)) is not None:
            # The hot path: the worker parses the body itself; the action is never built here.
            self.metrics.steps += 1
            return await self._apply(session, peeked[0], "step", body)
        step = read_step(body) or self._decode(body, StepRequest)
        return await self.step_session(session, step.action, step.seq)

    async def close(self, request: Request) -> Response:
        await self.close_session(self._session(request))
        return _json(200, encode({"closed": True}))

    # -- the session API the front doors share (HTTP routes, MCP, OpenEnv) --------------------
    async def open_session(self, owner: str, env_id: str, preset: str | None, kwargs: dict[str, Any]) -> Session:
        """A new session of ``env_id`` for ``owner``, its kwargs checked at the trust boundary.

        Raises ``_ApiError`` (a config mistake, a full server, a failed construction).
        """
        if env_id not in self.env_ids:
            raise _ApiError("ConfigError", f"env_id={env_id[:100]!r} is not served here; expected one of "
                           f"{', '.join(self.env_ids)}", field="env_id", value=env_id[:100],
                           allowed=list(self.env_ids))
        try:  # the trust boundary: nothing is built from what a client may not set
            kwargs = self.boundary.kwargs(env_id, preset, kwargs)
            preset = self.boundary.preset_name(env_id, preset)
        except ConfigError as exc:
            kind, message, details = env_error(exc)
            raise _ApiError(kind, message, **details) from None
        try:
            self._close_all(self.pool.reserve(owner), "ttl")
        except _PoolFull as full:
            raise _ApiError("ServerFull", str(full), headers={"Retry-After": "1"}) from None
        try:
            key, env, description = await self._make(env_id, kwargs)
        except BaseException:
            self.pool.release(owner)
            raise
        extra = {"ttl_s": self.config.session_ttl_s, "max_request_bytes": self.config.max_request_bytes,
                 "preset": preset}
        session = self.pool.add(owner, env_id, env, lambda sid: {**description, **extra, "session_id": sid},
                                session_id=key)
        self.metrics.sessions_created += 1
        return session

    async def reset_session(self, session: Session, seed: int | None = None,
                            options: dict[str, Any] | None = None, seq: int | None = None) -> tuple[int, bytes]:
        """Reset the session's env (options checked at the trust boundary): the reply's status and JSON."""
        refusal = None
        try:
            self.boundary.check_options(session.env_id, options)
        except ConfigError as exc:  # answered like an env's refusal: it takes its seq, the session goes on
            refusal = error_reply(exc)
        self.metrics.resets += 1
        return await self._apply(session, seq, "reset", {"seed": seed, "options": options}, refusal)

    async def step_session(self, session: Session, action: str, seq: int | None = None) -> tuple[int, bytes]:
        """Step the session's env: the reply's status and JSON."""
        self.metrics.steps += 1
        return await self._apply(session, seq, "step", {"action": action})

    async def session_tasks(self, session: Session, start: int | None, stop: int | None, max_bytes: int,
                            split: str) -> tuple[int, bytes]:
        """The session's env's tasks ``[start:stop]`` within ``max_bytes``, labelled ``split``
        (``jobs.tasks_reply``): the reply's status and JSON."""
        args = {"start": start, "stop": stop, "max_bytes": max_bytes, "split": split}
        return await self._apply(session, None, "tasks", args)

    async def close_session(self, session: Session, reason: str = "client") -> None:
        """Close the session and its env (after a call under way finishes)."""
        if self.pool.remove(session):
            self.metrics.sessions_closed[reason] += 1
            async with session.lock:
                await self._close_env(session)

    def discard(self, session: Session, reason: str) -> None:
        """Close the session without waiting (its env closes in the background)."""
        if self.pool.remove(session):
            self.metrics.sessions_closed[reason] += 1
            self._close_later(session)

    # -- lifecycle ---------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        if self.workers is not None:
            await self.workers.start()
        sweeper = asyncio.create_task(self._sweep_forever())
        try:
            yield
        finally:
            sweeper.cancel()
            for session in self.pool.all():
                self.pool.remove(session)
                self.metrics.sessions_closed["shutdown"] += 1
                if session.env is not None:
                    close_quietly(session.env)
            if self.workers is not None:
                self.workers.shutdown()
            self.calls.shutdown()

    def sweep(self) -> int:
        """Close the sessions idle past the TTL now; returns how many."""
        expired = self.pool.expire()
        self._close_all(expired, "ttl")
        return len(expired)

    async def _sweep_forever(self) -> None:
        garbage, last_collect = False, 0.0
        while True:
            await asyncio.sleep(self.config.sweep_interval_s)
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
            self._close_later(session)

    def _lost(self, keys: list[str]) -> None:
        # A worker died (or was killed to stop an overrunning call): its sessions are gone, and
        # say so when their clients come back.
        for key in keys:
            self._lost_keys[key] = None
            if len(self._lost_keys) > 4 * self.config.max_sessions:
                self._lost_keys.popitem(last=False)
            session = self.pool.by_id(key)
            if session is not None and self.pool.remove(session):
                self.metrics.sessions_closed["worker_lost"] += 1

    # -- where env calls run -----------------------------------------------------------------
    async def _make(self, env_id: str, kwargs: dict[str, Any]) -> tuple[str | None, Any, dict[str, Any]]:
        timeout = self.config.create_timeout_s
        if self.workers is None:
            try:
                (env, description), _ = await self.calls.run(timeout, make_env, env_id, kwargs,
                                                             on_late=_close_made_env)
            except _CallTimedOut as exc:
                raise _ApiError("Timeout", f"creating the env: {exc}") from None
            return None, env, description
        key = secrets.token_urlsafe(18)
        try:
            await self.workers.place(key)
            header, body = await self.workers.call(key, "make", {"env_id": env_id, "kwargs": kwargs}, timeout)
        except _CallOverran as exc:
            raise _ApiError("Timeout", f"creating the env: {exc}") from None
        except _WorkerLost as exc:
            raise _ApiError("EnvFailed", f"creating the env: {exc}") from None
        if header["status"] != 201:
            self.workers.forget(key)
            error = json.loads(body)["error"]
            raise _ApiError(error.pop("type"), error.pop("message"), **error)
        return key, None, json.loads(body)

    async def _run(self, session: Session, op: str, args: dict[str, Any]) -> tuple[int, bytes]:
        timeout = self.config.request_timeout_s
        if self.workers is not None:
            try:
                header, body = await self.workers.call(session.id, op, args, timeout)
            except _CallOverran as exc:
                self._drop(session, "timeout")
                stopped = "its worker process was killed" if exc.killed else "the call was interrupted"
                raise _ApiError("Timeout", f"{exc}; {stopped} and the session is closed") from None
            except _WorkerLost as exc:
                self._drop(session, "worker_lost")
                raise _ApiError("WorkerLost", f"{exc}; the session and its env are gone") from None
            return header["status"], body
        job = _JOBS[op]
        try:
            reply, seconds = await self.calls.run(timeout, job, session.env, *args.values(), inline=session.inline,
                                                  on_late=lambda _: close_quietly(session.env))
        except _CallTimedOut as exc:
            self._drop(session, "timeout")
            if exc.interrupted:  # stopped mid-call: the env is in an unknown state, close it now
                self.calls.background(close_quietly, session.env)
            raise _ApiError("Timeout", f"{exc}; the session is closed") from None
        if session.inline and not self.calls.stays_inline(seconds):
            session.inline = False  # a slow env (I/O, heavy work): keep it off the event loop from now on
        return reply

    def _close_later(self, session: Session) -> None:
        if self.workers is not None:
            self.workers.close_later(session.id, self.config.request_timeout_s)
        else:
            self.calls.background(close_quietly, session.env)

    async def _close_env(self, session: Session) -> None:
        if self.workers is not None:
            with contextlib.suppress(_CallOverran, _WorkerLost):
                await self.workers.call(session.id, "close", {}, self.config.request_timeout_s)
            self.workers.forget(session.id)
            return
        try:
            await self.calls.run(self.config.request_timeout_s, close_quietly, session.env)
        except _CallTimedOut:
            pass  # the session is gone either way; its thread finishes the close

    # -- plumbing ----------------------------------------------------------------------------
    def _measured(self, name: str, handler: Callable[[Request], Awaitable[Response]]) -> Callable:
        async def endpoint(request: Request) -> Response:
            start = time.perf_counter()
            try:
                response = await handler(request)
            except _ApiError as exc:
                response = _error_response(exc)
            except ClientDisconnect:  # expected (a client gave up mid-body): one line, no traceback
                log.info("%s: the client disconnected before its body arrived", name)
                response = _json(400, b"", {"Connection": "close"})  # nobody is left to read it
            except Exception as exc:  # a server bug: report it, keep serving
                log.exception("%s failed", name)
                response = _error_response(_ApiError("EnvFailed", f"internal error: {type(exc).__name__}"))
            finally:
                if (hold := request.scope.pop("agentgym.held", None)) is not None:
                    hold.release()  # the body's bytes and claim come back once the reply is ready
            self.metrics.observe(name, response.status_code, time.perf_counter() - start)
            return response

        return endpoint

    def _owner(self, request: Request) -> str:
        owner = self.owner_of(request.headers.get("authorization", ""))
        if owner is None:
            raise _ApiError("Unauthorized", "a valid 'Authorization: Bearer <token>' header is required",
                           headers={"WWW-Authenticate": "Bearer"})
        request.scope["agentgym.owner"] = owner  # whose share of the body budget its body takes
        return owner

    def owner_of(self, authorization: str) -> str | None:
        """Whose token an ``Authorization`` header carries; None when it is not a valid one."""
        if not self._owners:
            return _ANONYMOUS
        scheme, _, token = authorization.partition(" ")
        digest = hashlib.sha256(token.strip().encode()).digest()
        return self._owners.get(digest) if scheme.lower() == "bearer" else None

    def _session(self, request: Request) -> Session:
        return self._owned(self._owner(request), request.path_params["session_id"])

    def _owned(self, owner: str, session_id: str) -> Session:
        session = self.pool.get(owner, session_id)
        if session is None and session_id in self._lost_keys:
            raise _ApiError("WorkerLost", "the worker process hosting this session stopped; the session and its "
                           "env are gone")
        if session is None:  # unknown, expired and other clients' sessions look the same
            raise _ApiError("SessionNotFound", "no such session: it was closed, expired after "
                           f"{self.config.session_ttl_s:g} s idle, or never existed")
        return session

    async def _read(self, request: Request, model: type[BaseModel]) -> Any:
        return self._decode(await self._body(request), model)

    def _decode(self, body: bytes, model: type[BaseModel]) -> Any:
        try:
            return decode(body, model)
        except RecursionError:  # e.g. a megabyte of "[": nested deeper than the parser goes
            raise _ApiError("InvalidBody", "the body is nested too deeply") from None
        except ValueError as exc:  # not JSON (json.JSONDecodeError, UnicodeDecodeError) or not the model
            if not isinstance(exc, ValidationError):
                raise _ApiError("InvalidBody", f"the body is not JSON: {str(exc)[:200]}") from None
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))[:100] or 'body'}: {e['msg'][:200]}"
                                 for e in exc.errors()[:5])
            raise _ApiError("InvalidBody", f"the body is not a valid {model.__name__}: {problems}") from None

    async def _body(self, request: Request) -> bytes | bytearray:
        """The request body, within the size limit, its pace and deadline, and its client's share and
        the server's budget of bytes in flight (``agentgym.server.budget``)."""
        declared = request.headers.get("content-length")
        if declared is not None and not declared.isdigit():
            raise _ApiError("BadRequest", "Content-Length is not a number")
        hold = request.scope["agentgym.held"] = self.budget.hold(request.scope.get("agentgym.owner", _ANONYMOUS))
        config = self.config
        return await read_body(request.stream(), None if declared is None else int(declared), hold,
                               limit=config.max_request_bytes, timeout_s=config.body_timeout_s,
                               min_bytes_per_s=config.min_body_bytes_per_s)

    async def _apply(self, session: Session, seq: int | None, op: str, args: dict[str, Any] | bytes | bytearray,
                     refusal: tuple[int, bytes] | None = None) -> tuple[int, bytes]:
        session.in_flight += 1
        try:
            async with session.lock:
                if session not in self.pool:
                    raise _ApiError("SessionNotFound", "the session was closed while this call waited")
                if seq is not None and seq == session.seq and session.last_reply is not None:
                    self.metrics.replayed += 1
                    return session.last_reply
                if seq is not None and seq != session.seq + 1:
                    raise _ApiError("OutOfOrder", f"seq {seq} is out of order: the last call applied was "
                                   f"{session.seq}, so the next must be {session.seq + 1}")
                reply = refusal if refusal is not None else await self._run(session, op, args)
                if seq is not None and reply[0] != 422:  # a body the worker could not read was not applied
                    session.seq, session.last_reply = seq, reply
                return reply
        finally:
            session.in_flight -= 1
            session.last_used = self.clock()

    def _drop(self, session: Session, reason: str) -> None:
        if self.pool.remove(session):
            self.metrics.sessions_closed[reason] += 1


@takes_config
def create_app(config: ServerConfig | None = None, *, clock: Callable[[], float] = time.monotonic) -> Starlette:
    """The env server as a Starlette app; ``app.state.server`` is its ``EnvServer``.

    ``config`` must name tokens (or set ``insecure_no_auth``): an open server is never the default.
    """
    server = EnvServer(config or ServerConfig(), clock)
    app = Starlette(routes=server.routes(), lifespan=server.lifespan)
    app.state.server = server
    return app


def _worker_imports(config: ServerConfig, env_ids: tuple[str, ...]) -> tuple[str, ...]:
    # A worker must register the served envs too: import the modules that define them.
    modules = list(config.imports)
    for env_id in env_ids:
        spec = gymnasium.registry.get(env_id)
        entry = getattr(spec, "entry_point", None)
        module = entry.split(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", None)
        if module and module != "__main__" and not module.startswith("agentgym."):
            modules.append(module)
    return tuple(dict.fromkeys(modules))


def _error_response(exc: _ApiError) -> Response:
    headers = exc.headers
    if exc.kind in _CLOSES:  # the body may be unread (or still arriving): end the connection after the reply
        headers = {**(headers or {}), "Connection": "close"}
    return _json(exc.status, exc.body(), headers)


def _close_made_env(done: asyncio.Future) -> None:
    if not done.cancelled() and done.exception() is None:
        close_quietly(done.result()[0])


def _json(status: int, body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status_code=status, headers=headers, media_type="application/json")
