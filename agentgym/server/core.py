"""The env server's core: every door's sessions, their order and replies, over one executor.

    server = EnvServer(ServerConfig(tokens=("s3cret",)))
    session = await server.open_session(owner, "TravelPlanner-v0", preset=None, kwargs={})
    first = (await server.reset_session(session, seed=0)).read(ResetReply)   # an error reply raises ApiError

The doors sit on it: HTTP (``agentgym.server.app``), MCP (``mcp_app``) and OpenEnv (``openenv_app``).
A create request is checked against the operator's presets and the client allowlist
(``agentgym.server.boundary``) before anything is built. Env calls run where the executor puts them
(``agentgym.server.executors``: worker processes, or inline or in threads), under a deadline; a
session's calls are serialized by its lock, and a call's ``seq`` makes a retry safe (the stored
reply answers it). Sessions idle past the TTL are closed by a sweeper task that runs while the
lifespan is up. Replies are ``jobs.Reply``: the HTTP door sends them as they are, the others read
them typed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import hashlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from agentgym import __version__
from agentgym.errors import ConfigError
from agentgym.registration import ENV_IDS
from agentgym.remote.protocol import StepRequest, decode
from agentgym.server._fast import read_step
from agentgym.server._signals import ApiError, CallTimedOut, PoolFull, WorkerDied
from agentgym.server.boundary import ClientBoundary
from agentgym.server.budget import BodyBudget
from agentgym.server.calls import EnvCalls
from agentgym.server.config import ServerConfig, client_id, takes_config
from agentgym.server.executors import executor_for
from agentgym.server.jobs import Reply, env_error, error_reply
from agentgym.server.metrics import ServerMetrics
from agentgym.server.sessions import Session, SessionPool
from agentgym.server.splits import Split, TaskSplits
from agentgym.server.worker_pool import WorkerPool

__all__ = ["EnvServer", "ANONYMOUS", "decode_request"]

log = logging.getLogger("agentgym.server")
ANONYMOUS = "anonymous"
"""The owner of every session on a server without tokens."""
_COLLECT_EVERY_S = 10.0
_STOPPED = {"interrupted": "the call was interrupted and ", "killed": "its worker process was killed and "}


class EnvServer:
    """The state behind every door: config, sessions, metrics, the body budget, and where env calls run."""

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
        self.budget = BodyBudget(config.max_body_bytes_in_flight, config.body_share)
        self.executor = executor_for(config, self.env_ids, self._lost)
        self._owners = {hashlib.sha256(t.encode()).digest(): client_id(t) for t in config.tokens}
        self._lost_keys: OrderedDict[str, None] = OrderedDict()  # sessions whose worker died (bounded)
        self._splits = {env_id: TaskSplits(self.boundary, env_id, functools.partial(self._task_page, env_id))
                        for env_id in self.env_ids}
        self._started = clock()

    @property
    def calls(self) -> EnvCalls | None:
        """The in-process env calls (None where envs live in worker processes)."""
        return self.executor.calls

    @property
    def workers(self) -> WorkerPool | None:
        """The worker processes (None where envs live in this process)."""
        return self.executor.workers

    # -- who asks ----------------------------------------------------------------------------
    def owner_of(self, authorization: str) -> str | None:
        """Whose token an ``Authorization`` header carries; None when it is not a valid one."""
        if not self._owners:
            return ANONYMOUS
        scheme, _, token = authorization.partition(" ")
        digest = hashlib.sha256(token.strip().encode()).digest()
        return self._owners.get(digest) if scheme.lower() == "bearer" else None

    def owned(self, owner: str, session_id: str) -> Session:
        """``owner``'s session ``session_id``; ``ApiError`` (``SessionNotFound``, ``WorkerLost``) otherwise."""
        session = self.pool.get(owner, session_id)
        if session is None and session_id in self._lost_keys:
            raise ApiError("WorkerLost", "the worker process hosting this session stopped; the session and its "
                           "env are gone")
        if session is None:  # unknown, expired and other clients' sessions look the same
            raise ApiError("SessionNotFound", "no such session: it was closed, expired after "
                           f"{self.config.session_ttl_s:g} s idle, or never existed")
        return session

    # -- what the server is ------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "sessions": len(self.pool),
                "max_sessions": self.config.max_sessions, "uptime_s": round(self.clock() - self._started, 3)}

    def served(self) -> dict[str, Any]:
        """The env ids, each one's presets, and the reward names clients may pick."""
        presets = {env_id: self.boundary.preset_names(env_id) for env_id in self.env_ids}
        return {"env_ids": list(self.env_ids), "presets": presets, "rewards": list(self.boundary.reward_names)}

    def metrics_text(self) -> str:
        return self.metrics.render(len(self.pool), self.config.max_sessions)

    def splits(self, env_id: str) -> TaskSplits:
        """The task splits clients may pick for ``env_id`` (a served one), and their tasks."""
        return self._splits[env_id]

    # -- sessions ----------------------------------------------------------------------------
    async def open_session(self, owner: str, env_id: str, preset: str | None, kwargs: dict[str, Any]) -> Session:
        """A new session of ``env_id`` for ``owner``, its kwargs checked at the trust boundary.

        Raises ``ApiError`` (a config mistake, a full server, a failed construction).
        """
        if env_id not in self.env_ids:
            raise ApiError("ConfigError", f"env_id={env_id[:100]!r} is not served here; expected one of "
                           f"{', '.join(self.env_ids)}", field="env_id", value=env_id[:100],
                           allowed=list(self.env_ids))
        try:  # the trust boundary: nothing is built from what a client may not set
            kwargs = self.boundary.kwargs(env_id, preset, kwargs)
            preset = self.boundary.preset_name(env_id, preset)
        except ConfigError as exc:
            kind, message, details = env_error(exc)
            raise ApiError(kind, message, **details) from None
        try:
            self._close_all(self.pool.reserve(owner), "ttl")
        except PoolFull as full:
            raise ApiError("ServerFull", str(full), headers={"Retry-After": "1"}) from None
        key = secrets.token_urlsafe(18)
        try:
            env, description = await self._make(key, env_id, kwargs)
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
                            options: dict[str, Any] | None = None, seq: int | None = None) -> Reply:
        """Reset the session's env (options checked at the trust boundary)."""
        refusal = None
        try:
            self.boundary.check_options(session.env_id, options)
        except ConfigError as exc:  # answered like an env's refusal: it takes its seq, the session goes on
            refusal = error_reply(exc)
        self.metrics.resets += 1
        return await self._apply(session, seq, "reset", {"seed": seed, "options": options}, refusal)

    async def step_session(self, session: Session, action: str, seq: int | None = None) -> Reply:
        """Step the session's env."""
        self.metrics.steps += 1
        return await self._apply(session, seq, "step", {"action": action})

    async def step_body(self, session: Session, body: bytes) -> Reply:
        """Step the session's env with a step request's body (``StepRequest`` JSON, as a client sent it)."""
        if (peeked := self.executor.peek_step(body)) is not None:  # the executor reads the body itself
            self.metrics.steps += 1
            return await self._apply(session, peeked[0], "step", body)
        step = read_step(body) or decode_request(body, StepRequest)
        return await self.step_session(session, step.action, step.seq)

    async def session_tasks(self, session: Session, start: int | None, stop: int | None, max_bytes: int,
                            split: str) -> Reply:
        """The session's env's tasks ``[start:stop]`` within ``max_bytes``, labelled ``split``
        (``jobs.tasks_reply``)."""
        args = {"start": start, "stop": stop, "max_bytes": max_bytes, "split": split}
        return await self._apply(session, None, "tasks", args)

    async def close_session(self, session: Session, reason: str = "client") -> None:
        """Close the session and its env (after a call under way finishes)."""
        if self.pool.remove(session):
            self.metrics.sessions_closed[reason] += 1
            async with session.lock:
                await self.executor.close(session, self.config.request_timeout_s)

    def discard(self, session: Session, reason: str) -> None:
        """Close the session without waiting (its env closes in the background)."""
        if self.pool.remove(session):
            self.metrics.sessions_closed[reason] += 1
            self.executor.close_later(session, self.config.request_timeout_s)

    # -- lifecycle ---------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        await self.executor.start()
        sweeper = asyncio.create_task(self._sweep_forever())
        try:
            yield
        finally:
            sweeper.cancel()
            sessions = self.pool.all()
            for session in sessions:
                self.pool.remove(session)
                self.metrics.sessions_closed["shutdown"] += 1
            self.executor.shutdown(sessions)

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
            self.executor.close_later(session, self.config.request_timeout_s)

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

    # -- seq, replay, and the executor's outcomes ----------------------------------------------
    async def _apply(self, session: Session, seq: int | None, op: str, args: dict[str, Any] | bytes | bytearray,
                     refusal: Reply | None = None) -> Reply:
        session.in_flight += 1
        try:
            async with session.lock:
                if session not in self.pool:
                    raise ApiError("SessionNotFound", "the session was closed while this call waited")
                if seq is not None and seq == session.seq and session.last_reply is not None:
                    self.metrics.replayed += 1
                    return session.last_reply
                if seq is not None and seq != session.seq + 1:
                    raise ApiError("OutOfOrder", f"seq {seq} is out of order: the last call applied was "
                                   f"{session.seq}, so the next must be {session.seq + 1}")
                reply = refusal if refusal is not None else await self._run(session, op, args)
                if seq is not None and reply.status != 422:  # a body the worker could not read was not applied
                    session.seq, session.last_reply = seq, reply
                return reply
        finally:
            session.in_flight -= 1
            session.last_used = self.clock()

    async def _run(self, session: Session, op: str, args: dict[str, Any] | bytes | bytearray) -> Reply:
        try:
            return await self.executor.call(session, op, args, self.config.request_timeout_s)
        except CallTimedOut as exc:
            self._drop(session, "timeout")
            raise ApiError("Timeout", f"{exc}; {_STOPPED.get(exc.stopped, '')}the session is closed") from None
        except WorkerDied as exc:
            self._drop(session, "worker_lost")
            raise ApiError("WorkerLost", f"{exc}; the session and its env are gone") from None

    async def _make(self, key: str, env_id: str, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        try:
            return await self.executor.make(key, env_id, kwargs, self.config.create_timeout_s)
        except CallTimedOut as exc:
            raise ApiError("Timeout", f"creating the env: {exc}") from None
        except WorkerDied as exc:
            raise ApiError("EnvFailed", f"creating the env: {exc}") from None

    def _drop(self, session: Session, reason: str) -> None:
        if self.pool.remove(session):
            self.metrics.sessions_closed[reason] += 1

    async def _task_page(self, env_id: str, split: Split, start: int | None, stop: int | None,
                         max_bytes: int) -> dict[str, Any]:
        # A short session of the split: its env is built where every env is, and asked for one page.
        session = await self.open_session(ANONYMOUS, env_id, split.preset, split.kwargs)
        try:
            reply = await self.session_tasks(session, start, stop, max_bytes, split.name)
        finally:
            await self.close_session(session)
        return reply.json()


def decode_request(body: bytes, model: type[BaseModel]) -> Any:
    """A request body as ``model``; an ``InvalidBody`` ``ApiError`` saying what is wrong otherwise."""
    try:
        return decode(body, model)
    except RecursionError:  # e.g. a megabyte of "[": nested deeper than the parser goes
        raise ApiError("InvalidBody", "the body is nested too deeply") from None
    except ValueError as exc:  # not JSON (json.JSONDecodeError, UnicodeDecodeError) or not the model
        if not isinstance(exc, ValidationError):
            raise ApiError("InvalidBody", f"the body is not JSON: {str(exc)[:200]}") from None
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))[:100] or 'body'}: {e['msg'][:200]}"
                             for e in exc.errors()[:5])
        raise ApiError("InvalidBody", f"the body is not a valid {model.__name__}: {problems}") from None
