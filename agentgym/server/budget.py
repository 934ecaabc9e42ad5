"""Request bodies read within the server's byte budget: no client can hold it by dripping.

A body over ``SMALL_BODY_BYTES`` takes two things before its bytes are kept:

* a **claim** on its client's share (``max_body_bytes_in_flight_per_client``) of its declared
  size, made once before it is read, so that one client's bodies never hold more between them
  than the share, and never half-read bodies of one client wait for each other;
* the bytes it has **received**, reserved from the server-wide budget
  (``max_body_bytes_in_flight``) as they arrive. A body that declares 8 MB and sends a byte a
  second holds a few bytes of it, not 8 MB, so another client's bodies still find room.

Either waits up to a second for room, then the request is refused: 429 ``TooManyRequests`` (the
client's own share is taken) or 503 ``ServerBusy`` (the server's budget). A body must keep pace
with ``min_body_bytes_per_s`` (each such block within a second of the last one) and arrive
whole within ``body_timeout_s``, else 408. Everything is given back when the reply is sent.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from agentgym.server._signals import ApiError

if TYPE_CHECKING:
    from agentgym.server.config import ServerConfig

__all__ = ["BodyBudget", "BodyHold", "read_body", "read_request_body", "SMALL_BODY_BYTES"]

SMALL_BODY_BYTES = 64 * 1024
"""Bodies up to this size skip the budget: they fit in uvicorn's per-connection buffer anyway."""
_PACE_WINDOW_S = 1.0
"""A body must deliver ``min_body_bytes_per_s`` bytes within each window of this long."""


class BodyBudget:
    """``limit`` received bytes held across clients, ``share`` claimed bytes per client; waits up to ``wait_s``."""

    def __init__(self, limit: int, share: int | None = None, wait_s: float = 1.0) -> None:
        self.limit, self.share, self.wait_s = limit, share or limit, wait_s
        self.used = 0
        """Received bytes held by bodies being read or answered."""
        self.claimed: Counter[str] = Counter()
        """Declared bytes of the bodies each client has in flight."""
        self._freed = asyncio.Event()

    def hold(self, owner: str) -> BodyHold:
        return BodyHold(self, owner)

    async def _room(self, fits: Callable[[], bool]) -> bool:
        """Wait up to ``wait_s`` until ``fits()``; False when out of time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        while not fits():
            try:
                await asyncio.wait_for(self._freed.wait(), deadline - loop.time())
            except TimeoutError:
                return False
        return True

    def _freed_some(self) -> None:
        self._freed.set()  # wake every waiter to look again; later ones wait on a new event
        self._freed = asyncio.Event()


class BodyHold:
    """One request's part of the budget: its client's claim for it and the bytes it holds."""

    def __init__(self, budget: BodyBudget, owner: str) -> None:
        self.budget, self.owner, self.claimed, self.held = budget, owner, 0, 0

    async def claim(self, size: int) -> None:
        """Claim ``size`` bytes of the client's share (all of it, for a body larger than the share)."""
        budget, size = self.budget, min(size, self.budget.share)
        if not await budget._room(lambda: budget.claimed[self.owner] + size <= budget.share):
            raise ApiError("TooManyRequests", f"this client's bodies in flight already claim its share of "
                            f"{budget.share} bytes (max_body_bytes_in_flight_per_client); retry shortly",
                            headers={"Retry-After": "1"})
        budget.claimed[self.owner] += size
        self.claimed = size

    async def receive(self, total: int) -> None:
        """Hold ``total`` received bytes (at most the whole budget: a larger body fits alone)."""
        budget, need = self.budget, min(total, self.budget.limit) - self.held
        if need <= 0:
            return
        if not await budget._room(lambda: budget.used + need <= budget.limit):
            raise ApiError("ServerBusy", "the server is reading as many large bodies as its budget allows "
                            "(max_body_bytes_in_flight); retry shortly", headers={"Retry-After": "1"})
        budget.used += need
        self.held += need

    def release(self) -> None:
        budget = self.budget
        if self.claimed:
            budget.claimed[self.owner] -= self.claimed
            if budget.claimed[self.owner] <= 0:
                del budget.claimed[self.owner]
        budget.used -= self.held
        if self.claimed or self.held:
            self.claimed = self.held = 0
            budget._freed_some()


async def read_body(chunks: AsyncIterator[bytes], declared: int | None, hold: BodyHold, *, limit: int,
                    timeout_s: float, min_bytes_per_s: int) -> bytes | bytearray:
    """The body from ``chunks``: at most ``limit`` bytes (413), within the pace and deadline (408),
    a large one within ``hold``'s claim and bytes (``hold.release()`` gives them back)."""
    if declared is not None and declared > limit:
        raise ApiError("RequestTooLarge", f"the body has {declared} bytes; the limit is {limit} (max_request_bytes)")
    loop = asyncio.get_running_loop()
    if declared is not None and declared > SMALL_BODY_BYTES:
        await hold.claim(declared)
    body, block_start, pace_due = bytearray(), 0, loop.time() + _PACE_WINDOW_S
    end = loop.time() + timeout_s
    try:
        async with asyncio.timeout(min(end, pace_due)) as deadline:
            async for chunk in chunks:
                received = len(body) + len(chunk)
                if received > min(limit, declared if declared is not None else limit):
                    raise ApiError("RequestTooLarge", f"the body is over the limit of {min(limit, declared or limit)} "
                                    "bytes (max_request_bytes)")
                if received > SMALL_BODY_BYTES:  # a wait for the budget is the server's, not the client's
                    deadline.reschedule(end)
                    waited = loop.time()
                    if not hold.claimed:  # no declared size: claim for the largest
                        await hold.claim(limit)
                    await hold.receive(received)
                    pace_due += loop.time() - waited
                body += chunk
                if received - block_start >= min_bytes_per_s:  # a block arrived in time: the next one is due
                    block_start, pace_due = received, loop.time() + _PACE_WINDOW_S
                deadline.reschedule(min(end, pace_due))
    except TimeoutError:
        if loop.time() >= end:
            raise ApiError("RequestTimeout", f"the body did not arrive within {timeout_s:g} s "
                            "(body_timeout_s)") from None
        raise ApiError("RequestTimeout", f"the body arrived slower than {min_bytes_per_s} bytes/s "
                        "(min_body_bytes_per_s)") from None
    return bytes(body) if len(body) <= SMALL_BODY_BYTES else body  # a large one stays a bytearray: no copy


async def read_request_body(chunks: AsyncIterator[bytes], content_length: str | bytes | None, hold: BodyHold,
                            config: ServerConfig) -> bytes | bytearray:
    """A request's body within ``config``'s limits (``max_request_bytes``, ``body_timeout_s``,
    ``min_body_bytes_per_s``) and ``hold``'s part of the budget; ``content_length`` is its header as sent."""
    if content_length is not None and not content_length.isdigit():
        raise ApiError("BadRequest", "Content-Length is not a number")
    return await read_body(chunks, None if content_length is None else int(content_length), hold,
                           limit=config.max_request_bytes, timeout_s=config.body_timeout_s,
                           min_bytes_per_s=config.min_body_bytes_per_s)


def return_large_blocks(threshold: int = 1 << 20) -> None:
    """Have glibc's malloc map blocks of ``threshold`` bytes and up on their own and unmap them when freed.

    By default glibc raises that threshold to 32 MB after the first large block is freed, after
    which 8 MB request bodies come from the heap, and what a flood of them leaves behind is
    never given back. No-op elsewhere (macOS, musl).
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc is not None else None
    except (OSError, AttributeError):
        return
    if mallopt is not None:
        mallopt(-3, threshold)  # M_MMAP_THRESHOLD
