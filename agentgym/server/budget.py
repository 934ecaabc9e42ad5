"""A server-wide budget of request-body bytes held at once, so that a flood of large posts queues
(briefly) instead of growing the server's memory.

A request reserves the bytes it declares before its body is read (uvicorn reads no more than
its flow-control buffer of a connection the app is not reading), and gives them back when its
reply is sent. Reserving the whole declared size up front means two half-read bodies can never
hold the budget between them while each waits for the rest.
"""

from __future__ import annotations

import asyncio

__all__ = ["BodyBudget", "SMALL_BODY_BYTES"]

SMALL_BODY_BYTES = 64 * 1024
"""Bodies up to this size skip the budget: they fit in uvicorn's per-connection buffer anyway."""


class BodyBudget:
    """``limit`` bytes shared by every request; ``reserve`` waits up to ``wait_s`` for room."""

    def __init__(self, limit: int, wait_s: float = 1.0) -> None:
        self.limit, self.wait_s, self.used = limit, wait_s, 0
        self._freed = asyncio.Event()

    async def reserve(self, size: int) -> int:
        """Hold ``size`` bytes (at most the whole budget); returns what was held, 0 when out of time."""
        size = min(size, self.limit)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        while self.used + size > self.limit:
            try:
                await asyncio.wait_for(self._freed.wait(), deadline - loop.time())
            except TimeoutError:
                return 0
        self.used += size
        return size

    def release(self, size: int) -> None:
        if size:
            self.used -= size
            self._freed.set()  # wake every waiter to look again; later ones wait on a new event
            self._freed = asyncio.Event()


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
