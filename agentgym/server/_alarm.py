"""Interrupt a call at its deadline with an interval timer (SIGALRM): the inline calls of the
server's event loop and the calls of a worker process both run under one.

Signals reach only the main thread, and only on POSIX systems; callers check before using it.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from agentgym.server._signals import Interrupted

__all__ = ["Alarm"]


class Alarm:
    """Runs calls under a deadline; installs its SIGALRM handler when made (on the main thread)."""

    def __init__(self) -> None:
        self._armed = False
        signal.signal(signal.SIGALRM, self._on_alarm)

    def run(self, timeout: float, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``; raises :class:`Interrupted` once ``timeout`` seconds have passed."""
        try:
            self._armed = True
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                return fn(*args)
            finally:
                self._disarm()
        except Interrupted:
            # The alarm may also fire while the call returns, before the timer is cleared: a
            # (rare) spurious timeout, the safe side, as the caller then drops the env.
            self._disarm()
            raise

    def _disarm(self) -> None:
        self._armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)

    def _on_alarm(self, signum: int, frame: Any) -> None:
        if self._armed:
            raise Interrupted()
