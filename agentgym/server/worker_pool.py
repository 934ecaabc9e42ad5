"""Env calls in worker processes, so that no env call can stall the server's event loop.

Each session's env lives in one worker process (``agentgym.server.worker_process``), chosen as the one
with the fewest sessions when the session is created. A slow call (a degenerate megabyte
action, a hung retriever) never stalls the event loop, ``/health`` or the other workers, and
holds up the other sessions of its own worker only until it has run ``_SLOW_S`` (50 ms): the
worker then runs their calls on overflow threads. Deadlines: the worker interrupts a call at its
timeout and closes that env; if the worker does not answer within a grace period after that
(stuck in C code that ignores signals), the server kills it, which stops the work for certain,
and the sessions it hosted are lost (their next call answers ``WorkerLost``). A new worker is
started in its place on demand.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from agentgym.server._signals import CallTimedOut, WorkerDied
from agentgym.server.worker_process import _HEAD, pack_frame

__all__ = ["WorkerPool"]

log = logging.getLogger("agentgym.server")
_GRACE_S = 1.0
"""How long after its deadline a call may take to be interrupted before its worker is killed."""
_START_TIMEOUT_S = 120.0
_JOIN_BYTES = 64 * 1024


class _Worker:
    """One worker process and the calls sent to it (answered in any order: see ``agentgym.server.worker_process``)."""

    def __init__(self, index: int, proc: asyncio.subprocess.Process, on_exit: Callable[[_Worker], None]) -> None:
        self.index, self.proc, self.on_exit = index, proc, on_exit
        self.keys: set[str] = set()
        self.calls: dict[int, tuple[float, asyncio.Future, asyncio.TimerHandle]] = {}
        self._outbox: list[bytes] = []
        self._ids = itertools.count(1)
        self.dead = False
        self.killed_for: int | None = None  # the id of the call that overran, when killed
        self._reader = asyncio.get_running_loop().create_task(self._read_replies())

    def send(self, op: str, key: str, args: dict[str, Any] | bytes | bytearray, timeout: float) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if self.dead:
            future.set_exception(WorkerDied("the worker process is gone"))
            return future
        call_id = next(self._ids)
        body = args if isinstance(args, (bytes, bytearray)) else json.dumps(  # a request body, forwarded as it came
            args, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        head = pack_frame({"id": call_id, "op": op, "key": key, "timeout": timeout}, size=len(body))
        if len(body) > _JOIN_BYTES:  # written apart from the head: a large body is not copied to join them
            self._flush_outbox()
            self.proc.stdin.write(head)
            self.proc.stdin.write(body)
        else:  # the calls of one event-loop turn (a coalesced batch) go out in one system call
            self._outbox.append(head + body)
            if len(self._outbox) == 1:
                loop.call_soon(self._flush_outbox)
        # The worker interrupts a call at its deadline; past a grace period, only killing it stops the call.
        watchdog = loop.call_later(timeout + _GRACE_S, self._overran, call_id)
        self.calls[call_id] = (timeout, future, watchdog)
        return future

    def _flush_outbox(self) -> None:
        if self._outbox:
            frames, self._outbox = self._outbox, []
            if not self.dead:
                self.proc.stdin.write(b"".join(frames))

    def kill(self) -> None:
        if not self.dead:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    def _overran(self, call_id: int) -> None:
        if call_id in self.calls:
            log.warning("worker %d did not stop an overrunning call; killing it", self.index)
            self.killed_for = call_id
            self.kill()

    async def _read_replies(self) -> None:
        stdout = self.proc.stdout
        try:
            while True:
                head_len, body_len = _HEAD.unpack(await stdout.readexactly(_HEAD.size))
                frame = await stdout.readexactly(head_len + body_len)
                header, body = json.loads(frame[:head_len]), frame[head_len:]
                _, future, watchdog = self.calls.pop(header["id"])
                watchdog.cancel()
                if not future.done():
                    future.set_result((header, body))
        except asyncio.CancelledError:  # the event loop is going away: so is the server
            raise
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, KeyError):
            pass
        self._die()

    def _die(self) -> None:
        self.dead = True
        calls, self.calls = self.calls, {}
        for call_id, (timeout, future, watchdog) in calls.items():
            watchdog.cancel()
            if not future.done():
                error = (CallTimedOut(timeout, stopped="killed") if call_id == self.killed_for
                         else WorkerDied("the worker process hosting this session stopped"))
                future.set_exception(error)
        self.on_exit(self)


class WorkerPool:
    """Up to ``size`` worker processes, started when first needed (or by ``start``)."""

    def __init__(self, size: int, imports: tuple[str, ...] = ()) -> None:
        self.size, self.imports = size, imports
        self._workers: dict[int, _Worker] = {}
        self._starting: dict[int, asyncio.Task] = {}
        self._placement: dict[str, int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.on_lost: Callable[[list[str]], None] = lambda keys: None
        """Called with the keys of the sessions a dead worker hosted."""

    async def start(self) -> None:
        """Start every worker now (the server's start-up), rather than on the first sessions."""
        await asyncio.gather(*(self._worker(i) for i in range(self.size)))

    async def place(self, key: str) -> int:
        """Choose the worker for a new session: the one with the fewest sessions."""
        self._bind_loop()
        index = min(range(self.size), key=lambda i: (len(self._workers[i].keys) if i in self._workers else 0, i))
        await self._worker(index)
        self._placement[key] = index
        self._workers[index].keys.add(key)
        return index

    async def call(self, key: str, op: str, args: dict[str, Any] | bytes | bytearray,
                   timeout: float) -> tuple[dict[str, Any], bytes]:
        """Run ``op`` for the session ``key`` in its worker; the worker's reply header and body.

        Raises ``CallTimedOut`` past the deadline and ``WorkerDied`` when the session's worker died.
        """
        index = self._placement.get(key)
        worker = self._workers.get(index) if index is not None else None
        if worker is None or worker.dead:
            raise WorkerDied("the worker process hosting this session stopped")
        header, body = await worker.send(op, key, args, timeout)
        if header.get("timed_out"):
            self.forget(key)
            raise CallTimedOut(timeout, stopped="interrupted")
        return header, body

    def forget(self, key: str) -> None:
        index = self._placement.pop(key, None)
        if index is not None and index in self._workers:
            self._workers[index].keys.discard(key)

    def close_later(self, key: str, timeout: float) -> None:
        """Close the session's env in its worker, without waiting."""
        index = self._placement.get(key)
        worker = self._workers.get(index) if index is not None else None
        self.forget(key)
        if worker is not None and not worker.dead:
            future = worker.send("close", key, {}, timeout)
            future.add_done_callback(lambda f: f.exception())  # nobody waits: mark it retrieved

    def stats(self) -> list[tuple[int, int]]:
        """(pid, sessions) of each running worker."""
        return [(w.proc.pid, len(w.keys)) for w in self._workers.values() if not w.dead]

    def shutdown(self) -> None:
        for worker in list(self._workers.values()):
            with contextlib.suppress(Exception):
                worker.proc.stdin.close()
            worker.kill()
        self._workers.clear()

    def _bind_loop(self) -> None:
        # Workers talk through pipes bound to one event loop; a new loop (a new asyncio.run in a
        # test) gets new workers.
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None:
                self.shutdown()
                self._placement.clear()
            self._loop = loop

    async def _worker(self, index: int) -> _Worker:
        self._bind_loop()
        worker = self._workers.get(index)
        if worker is not None and not worker.dead:
            return worker
        task = self._starting.get(index)
        if task is None:
            task = self._starting[index] = asyncio.get_running_loop().create_task(self._spawn(index))
            task.add_done_callback(lambda _: self._starting.pop(index, None))
        return await asyncio.shield(task)

    async def _spawn(self, index: int) -> _Worker:
        # The worker imports what this process would: the same agentgym, and the modules of its envs.
        path = os.pathsep.join(p or os.getcwd() for p in sys.path)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agentgym.server.worker_process", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, start_new_session=True, limit=2**26, env={**os.environ, "PYTHONPATH": path})
        proc.stdin.write(pack_frame({"imports": list(self.imports)}))
        try:
            async with asyncio.timeout(_START_TIMEOUT_S):
                head_len, body_len = _HEAD.unpack(await proc.stdout.readexactly(_HEAD.size))
                await proc.stdout.readexactly(head_len + body_len)
        except (asyncio.IncompleteReadError, TimeoutError):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            raise WorkerDied("an env worker process failed to start (see the server's log)") from None
        worker = _Worker(index, proc, self._exited)
        self._workers[index] = worker
        return worker

    def _exited(self, worker: _Worker) -> None:
        if self._workers.get(worker.index) is worker:
            del self._workers[worker.index]
        lost = sorted(worker.keys)
        for key in lost:
            self._placement.pop(key, None)
        if worker.proc.returncode is None:  # a garbled channel: the process is of no more use
            worker.kill()
        if lost:
            self.on_lost(lost)
