"""Coalescing the steps of many ``AsyncRemoteEnv`` sessions into one request (``coalesce=True``).

The steps that the sessions of one server and token send in the same turn of the event loop go
out together as one ``POST /v1/steps``; the server steps them concurrently and answers each
one's reply in order. One HTTP exchange then carries a whole wave of a trainer's rollouts instead
of one step, which is where the server's time per step went (HTTP parsing and routing). Up to
``_CONNECTIONS`` batches are in flight at once; steps that arrive meanwhile wait for the next.

A batch answers when its slowest step does, so coalescing suits many sessions of fast, similar
steps (training); it is opt-in. Anything short of a batch reply (a dropped connection, a full
server, a server without ``/v1/steps``) hands each step back to its session, which sends it alone
with its usual retries: steps carry their sequence number, so none is applied twice.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import Any

from agentgym.remote._connection import AsyncConnection, ConnectionLost, Endpoint, Reply
from agentgym.remote.protocol import API_PREFIX, MAX_BATCH, encode

__all__ = ["batcher_for"]

_CONNECTIONS = 2
_NO_HEADERS: dict[str, str] = {}
_batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], _Batcher]] = \
    weakref.WeakKeyDictionary()

try:
    import msgspec

    _REPLIES: Any = msgspec.json.Decoder(list[tuple[int, msgspec.Raw]])
except ImportError:  # the client's slower path: parse, then write each reply back out
    _REPLIES = None


def batcher_for(endpoint: Endpoint, headers: dict[str, str], timeout: float) -> _Batcher:
    """The batcher this event loop shares among the sessions of ``endpoint`` and its token."""
    loop = asyncio.get_running_loop()
    key = (endpoint.host, endpoint.port, endpoint.base_path, id(endpoint.ssl_context), tuple(sorted(headers.items())),
           timeout)
    table = _batchers.setdefault(loop, {})
    batcher = table.get(key)
    if batcher is None:
        batcher = table[key] = _Batcher(endpoint, headers, timeout)
    return batcher


class _Batcher:
    def __init__(self, endpoint: Endpoint, headers: dict[str, str], timeout: float) -> None:
        self.headers = headers
        self.supported = True
        """False once the server answered that it has no batch route: sessions then send alone."""
        self._idle = [AsyncConnection(endpoint, timeout) for _ in range(_CONNECTIONS)]
        self._pending: list[tuple[str, bytes, asyncio.Future[Reply | None]]] = []
        self._scheduled = False

    def submit(self, session_id: str, body: bytes) -> asyncio.Future[Reply | None]:
        """The step's reply, or None when the session should send it alone."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._pending.append((session_id, body, future))
        self._schedule(loop)
        return future

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._scheduled and self._idle and self._pending:
            self._scheduled = True
            loop.call_soon(self._flush)  # after the other ready tasks: they may step too

    def _flush(self) -> None:
        self._scheduled = False
        if self._idle and self._pending:
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
            asyncio.ensure_future(self._send(self._idle.pop(), batch))

    async def _send(self, conn: AsyncConnection, batch: list[tuple[str, bytes, asyncio.Future[Reply | None]]]) -> None:
        body = b"[" + b",".join(b'{"session_id":%s,"step":%s}' % (json.dumps(sid).encode(), step)
                                for sid, step, _ in batch) + b"]"
        replies: list[Reply] | None = None
        try:
            reply = await conn.request("POST", f"{API_PREFIX}/steps", body, self.headers)
            if reply.status == 200:
                replies = _split(reply.body)
            elif reply.status in (404, 405):  # an older server
                self.supported = False
        except (ConnectionLost, OSError, ValueError):  # TimeoutError is an OSError
            pass
        except BaseException:
            for *_, future in batch:
                future.cancel()
            raise
        finally:
            self._idle.append(conn)
            self._schedule(asyncio.get_running_loop())
        if replies is not None and len(replies) != len(batch):
            replies = None
        for i, (*_, future) in enumerate(batch):
            if not future.done():
                future.set_result(None if replies is None else replies[i])


def _split(body: bytes) -> list[Reply]:
    if _REPLIES is not None:
        try:
            return [Reply(status, _NO_HEADERS, bytes(raw)) for status, raw in _REPLIES.decode(body)]
        except msgspec.DecodeError:  # e.g. a lone surrogate escape in model text, which msgspec refuses
            pass
    return [Reply(status, _NO_HEADERS, encode(reply)) for status, reply in json.loads(body)]
