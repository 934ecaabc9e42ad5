"""A test env whose steps sleep or spin on request: for the server's timeout tests.

Importing it registers ``AgentGymTest/Sleepy-v0`` (``agentgym serve --import sleepy_env``).
Actions: ``sleep S`` (blocks in ``time.sleep``), ``spin S`` (a busy Python loop), ``stuck S`` (a
busy loop with SIGALRM blocked that also swallows asynchronous exceptions, as C code that never
checks for signals would be: only killing the process stops it), ``hog S`` (one C call that
holds the GIL for about S seconds, as a quadratic regex on a megabyte would), ``stop`` (ends the
episode); anything else is echoed.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import gymnasium

from agentgym.core.env import TextEnv
from agentgym.core.types import StepInfo

ENV_ID = "AgentGymTest/Sleepy-v0"


class SleepyEnv(TextEnv):
    def on_reset(self, options: dict[str, Any]) -> tuple[str, StepInfo]:
        return "ready", StepInfo(turn=0)

    def on_step(self, action: str) -> tuple[str, float, bool, StepInfo]:
        verb, _, amount = action.partition(" ")
        if verb == "sleep":
            time.sleep(float(amount))
        elif verb == "spin":
            end = time.monotonic() + float(amount)
            while time.monotonic() < end:
                pass
        elif verb == "stuck":  # deaf to every interruption, as C code that never checks would be
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            end = time.monotonic() + float(amount)
            while time.monotonic() < end:
                try:
                    while time.monotonic() < end:
                        pass
                except BaseException:  # an asynchronous Interrupted (a worker's overflow thread): ignored
                    continue
        elif verb == "hog":
            start = time.perf_counter()
            sum(range(1_000_000))
            per_item = (time.perf_counter() - start) / 1_000_000
            sum(range(int(float(amount) / per_item)))  # builtin sum over a range: no GIL release inside
        return f"did {action}", 0.0, action == "stop", StepInfo(turn=self.turn, action="tool")


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point=SleepyEnv)
