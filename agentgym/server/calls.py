"""Env calls under a deadline: inline on the event loop, or in a thread pool.

Handing a call to a thread and back costs far more than an agentgym step itself (a few hundred
microseconds of wake-ups and GIL hand-offs against tens for a TravelPlanner tool call), so fast
calls run inline on the event loop thread, and an interval timer (SIGALRM) interrupts one that
overruns its deadline. Calls that may block on I/O (env creation and closing, and any session
whose calls have proved slow) run in threads, where a deadline answers the client while the
thread finishes on its own. Inline needs the event loop in the main thread on a POSIX system;
elsewhere (e.g. a server run in a test thread) every call goes to the threads.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentgym.server._alarm import Alarm
from agentgym.server._signals import CallTimedOut, Interrupted

__all__ = ["EnvCalls", "ENV_CALL_MODES"]

ENV_CALL_MODES = ("auto", "inline", "threads")


class EnvCalls:
    """Runs env calls for the server. ``mode``: ``auto`` (inline until a session proves slow),
    ``inline`` (always inline when possible) or ``threads`` (always in threads)."""

    def __init__(self, mode: str, threads: int, inline_budget_s: float) -> None:
        self.mode, self.inline_budget_s = mode, inline_budget_s
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="agentgym-env")
        self._alarm: Alarm | None = None
        self._inline: bool | None = None  # decided on first use, on the event loop's thread

    @property
    def inline_available(self) -> bool:
        if self._inline is None:
            self._inline = (self.mode != "threads" and hasattr(signal, "setitimer")
                            and threading.current_thread() is threading.main_thread())
            if self._inline:
                self._alarm = Alarm()
        return self._inline

    async def run(self, timeout: float, fn: Callable[..., Any], *args: Any, inline: bool = False,
                  on_late: Callable[[asyncio.Future], None] | None = None) -> tuple[Any, float]:
        """``fn(*args)`` and its wall time; raises ``CallTimedOut`` after ``timeout`` s
        (``stopped="interrupted"`` inline; a thread runs on).

        ``inline=True`` asks for the event loop thread (granted when available). A thread cannot be
        stopped, so ``on_late(future)`` cleans up once a timed-out thread call finishes.
        """
        start = time.perf_counter()
        if inline and self.inline_available:
            return self._run_inline(timeout, fn, args), time.perf_counter() - start
        future = asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        try:
            async with asyncio.timeout(timeout) as deadline:
                return await asyncio.shield(future), time.perf_counter() - start
        except TimeoutError:
            if not deadline.expired():
                raise
        if on_late is not None:
            future.add_done_callback(lambda done: self.background(on_late, done))
        raise CallTimedOut(timeout)

    def stays_inline(self, seconds: float) -> bool:
        """Whether a session whose inline call took ``seconds`` may keep running inline."""
        return self.mode == "inline" or seconds <= self.inline_budget_s

    def background(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` in a thread, not waiting; inline once the pool is shut down."""
        try:
            self._executor.submit(fn, *args)
        except RuntimeError:
            fn(*args)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _run_inline(self, timeout: float, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        try:
            return self._alarm.run(timeout, fn, *args)
        except Interrupted:
            raise CallTimedOut(timeout, stopped="interrupted") from None  # the session is then closed
