"""Where local env calls run: agentgym's one threading rule.

**The rule.** An env *instance* is used by one thread at a time (its episode state is not
guarded); *different* instances may be reset and stepped in different threads at once, in any
threads. Everything envs share within a process is safe under that:

* the bounded memos and result caches (``functools.lru_cache``, the evaluator's per-world memos,
  whose eviction tolerates a key another thread evicted first, the shared verdicts);
* ``ast`` parsing, which CPython 3.11 gets wrong when two threads build trees at once (gh-106905,
  ``SystemError: AST constructor recursion depth mismatch``): every literal parse goes through
  ``agentgym._literal``'s lock;
* building what instances share (a TravelPlanner world, a BM25 index) happens once, under a lock.

``tests/core/test_env_threads.py`` checks the rule: many threads stepping TravelPlanner envs with
degenerate plan texts (literal parsing included) give exactly what one thread gives, with thread
switches forced inside parsing and the memos evicting on every insert.

**Who runs env calls where.** ``agentgym run`` and the verl agent loop await :func:`run_in_env_thread`
(one pool per process, :data:`ENV_THREADS` threads unless the first caller asks otherwise: verl's
``agentgym.env_workers``); the env server runs them in worker processes or its own threads
(``agentgym serve``'s ``--env-calls``); a trainer that steps envs synchronously in its own
threads (TRL's rollout function) calls them directly, one env instance per thread.

**Why threads help at all.** A TravelPlanner step is pure Python and holds the GIL, so threads
only keep the event loop free for model requests; steps that wait (a retrieval server, an LLM
judge) overlap. Training throughput beyond one core's worth of env work comes from processes:
more verl agent-loop workers (``actor_rollout_ref.rollout.agent.num_workers``), or an env server
with worker processes.
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
