"""Where local env calls run: agentgym's one threading rule (docs/verl.md, "Env calls and threads").

An env *instance* is used by one thread at a time; different instances may be reset and stepped
in different threads at once. Everything envs share within a process is safe under that: the
bounded caches (eviction tolerates a key another thread evicted first), literal parsing (one lock
in ``agentgym.envs.travelplanner._literal``: CPython 3.11's ``ast`` fails on concurrent use,
gh-106905), and the construction of what instances share (a world, an index), done once under a lock.
``tests/core/test_env_threads.py`` holds the rule under forced thread switches.

``agentgym run`` and the verl agent loop await :func:`run_in_env_thread` (one pool per process);
the env server uses its worker processes or threads; a trainer stepping envs synchronously in
its own threads (TRL's rollout) calls them directly, one env instance per thread.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["ENV_THREADS", "env_executor", "run_in_env_thread"]

T = TypeVar("T")
ENV_THREADS = 8
"""Threads of the process's env pool when its first caller names no other number."""

_EXECUTOR: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def env_executor(max_workers: int | None = None) -> ThreadPoolExecutor:
    """The process's env thread pool, created on first use (with ``max_workers`` threads, else
    :data:`ENV_THREADS`); later sizes are ignored."""
    global _EXECUTOR
    with _LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(max_workers or ENV_THREADS, thread_name_prefix="agentgym-env")
        return _EXECUTOR


async def run_in_env_thread(fn: Callable[..., T], *args: Any, max_workers: int | None = None, **kwargs: Any) -> T:
    """Run a blocking env call on the env thread pool and await its result."""
    call = functools.partial(fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(env_executor(max_workers), call)
