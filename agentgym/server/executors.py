"""Where a server's env calls run: one interface (``Executor``), two implementations.

* ``InWorkers`` (``env_calls="processes"``, the default): each session's env lives in a worker
  process (``agentgym.server.worker_pool``), so no call can stall the event loop;
* ``InProcess`` (``auto``, ``inline``, ``threads``): envs live in this process, their calls inline on
  the event loop under an alarm or in threads (``agentgym.server.calls``).

The core (``agentgym.server.core``) keeps the sessions, their order and their replies; an executor
builds, calls and closes a session's env and says how a call ended: a ``Reply``, or
``CallTimedOut`` / ``WorkerDied`` (``agentgym.server._signals``), after which the core drops the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any, Protocol

import gymnasium

from agentgym.server._fast import peek_step
from agentgym.server._signals import ApiError, CallTimedOut, WorkerDied
from agentgym.server.calls import EnvCalls
from agentgym.server.config import ServerConfig
from agentgym.server.jobs import Reply, close_quietly, make_env, reset_reply, step_reply, tasks_reply
from agentgym.server.sessions import Session
from agentgym.server.worker_pool import WorkerPool

__all__ = ["Executor", "InProcess", "InWorkers", "executor_for"]

_JOBS = {"reset": reset_reply, "step": step_reply, "tasks": tasks_reply}  # an op's job, when env calls run here


class Executor(Protocol):
    """Builds, calls and closes sessions' envs for the core."""

    calls: EnvCalls | None
    """The in-process calls (None where envs live in worker processes)."""
    workers: WorkerPool | None
    """The worker processes (None where envs live in this process)."""

    async def start(self) -> None:
        """Get ready to serve (the server's start-up)."""

    def shutdown(self, sessions: list[Session]) -> None:
        """Stop, with the envs of ``sessions`` (the server's shut-down)."""

    async def make(self, key: str, env_id: str, kwargs: dict[str, Any], timeout: float) -> tuple[Any, dict[str, Any]]:
        """Build the env of the new session ``key``: (the env, or None where it lives elsewhere; its description).

        Raises ``ApiError`` (the env refused), ``CallTimedOut`` or ``WorkerDied``.
        """

    async def call(self, session: Session, op: str, args: dict[str, Any] | bytes | bytearray,
                   timeout: float) -> Reply:
        """Run ``op`` (``reset``, ``step``, ``tasks``) on the session's env. Raises ``CallTimedOut`` or
        ``WorkerDied``; either way the env is gone (or going)."""

    async def close(self, session: Session, timeout: float) -> None:
        """Close the session's env, waiting up to ``timeout``."""

    def close_later(self, session: Session, timeout: float) -> None:
        """Close the session's env in the background."""

    def peek_step(self, body: bytes) -> tuple[int | None] | None:
        """``(seq,)`` when this executor takes a step request's body as it came (``call(..., "step", body)``);
        None: the core reads the body and passes ``{"action": ...}``."""


class InProcess:
    """Env calls in this process: inline on the event loop until a session proves slow, or in threads."""

    workers = None

    def __init__(self, config: ServerConfig) -> None:
        self.calls = EnvCalls(config.env_calls, config.env_threads, config.inline_budget_s)

    async def start(self) -> None:
        pass

    def shutdown(self, sessions: list[Session]) -> None:
        for session in sessions:
            close_quietly(session.env)
        self.calls.shutdown()

    async def make(self, key: str, env_id: str, kwargs: dict[str, Any], timeout: float) -> tuple[Any, dict[str, Any]]:
        made, _ = await self.calls.run(timeout, make_env, env_id, kwargs, on_late=_close_made_env)
        return made

    async def call(self, session: Session, op: str, args: dict[str, Any] | bytes | bytearray,
                   timeout: float) -> Reply:
        env = session.env
        try:
            reply, seconds = await self.calls.run(timeout, _JOBS[op], env, *args.values(), inline=session.inline,
                                                  on_late=lambda _: close_quietly(env))
        except CallTimedOut as exc:
            if exc.stopped:  # stopped mid-call: the env is in an unknown state, close it now
                self.calls.background(close_quietly, env)
            raise
        if session.inline and not self.calls.stays_inline(seconds):
            session.inline = False  # a slow env (I/O, heavy work): keep it off the event loop from now on
        return reply

    async def close(self, session: Session, timeout: float) -> None:
        with contextlib.suppress(CallTimedOut):  # the session is gone either way; its thread finishes the close
            await self.calls.run(timeout, close_quietly, session.env)

    def close_later(self, session: Session, timeout: float) -> None:
        self.calls.background(close_quietly, session.env)

    def peek_step(self, body: bytes) -> None:
        return None


class InWorkers:
    """Env calls in worker processes: a session's env lives in one, under the session's id."""

    calls = None

    def __init__(self, config: ServerConfig, env_ids: tuple[str, ...], on_lost: Callable[[list[str]], None]) -> None:
        self.workers = WorkerPool(config.env_workers, worker_imports(config, env_ids))
        self.workers.on_lost = on_lost

    async def start(self) -> None:
        await self.workers.start()

    def shutdown(self, sessions: list[Session]) -> None:
        self.workers.shutdown()  # the envs end with their processes

    async def make(self, key: str, env_id: str, kwargs: dict[str, Any], timeout: float) -> tuple[Any, dict[str, Any]]:
        await self.workers.place(key)
        header, body = await self.workers.call(key, "make", {"env_id": env_id, "kwargs": kwargs}, timeout)
        if header["status"] != 201:
            self.workers.forget(key)
            raise ApiError.of_reply(body)
        return None, json.loads(body)

    async def call(self, session: Session, op: str, args: dict[str, Any] | bytes | bytearray,
                   timeout: float) -> Reply:
        header, body = await self.workers.call(session.id, op, args, timeout)
        return Reply(header["status"], body)

    async def close(self, session: Session, timeout: float) -> None:
        with contextlib.suppress(CallTimedOut, WorkerDied):
            await self.workers.call(session.id, "close", {}, timeout)
        self.workers.forget(session.id)

    def close_later(self, session: Session, timeout: float) -> None:
        self.workers.close_later(session.id, timeout)

    def peek_step(self, body: bytes) -> tuple[int | None] | None:
        return peek_step(body)  # the hot path: the worker parses the body itself; the action is never built here


def executor_for(config: ServerConfig, env_ids: tuple[str, ...], on_lost: Callable[[list[str]], None]) -> Executor:
    """The executor ``config.env_calls`` asks for; ``on_lost`` hears the ids of sessions a dead worker hosted."""
    if config.env_calls == "processes":
        return InWorkers(config, env_ids, on_lost)
    return InProcess(config)


def worker_imports(config: ServerConfig, env_ids: tuple[str, ...]) -> tuple[str, ...]:
    """The modules a worker imports first: ``config.imports`` and those that register the served envs."""
    modules = list(config.imports)
    for env_id in env_ids:
        spec = gymnasium.registry.get(env_id)
        entry = getattr(spec, "entry_point", None)
        module = entry.split(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", None)
        if module and module != "__main__" and not module.startswith("agentgym."):
            modules.append(module)
    return tuple(dict.fromkeys(modules))


def _close_made_env(done: asyncio.Future) -> None:
    if not done.cancelled() and done.exception() is None:
        close_quietly(done.result()[0])
