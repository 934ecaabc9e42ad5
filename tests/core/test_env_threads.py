"""The threading rule (``agentgym._env_threads``): env instances in many threads at once, one
thread per instance, give exactly what one thread gives.

Thread switches are forced as often as CPython allows, and inside C code too: a GC callback that
releases the GIL stands in for the finalizers that do so in a real worker (closing a file or a
socket), which is how two threads end up inside ``ast``'s tree building at once (gh-106905)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym import _env_threads
from agentgym import _memo
from agentgym.envs.travelplanner.world import index as world_index

THREADS = 8


@contextlib.contextmanager
def contention() -> Iterator[None]:
    def release_the_gil(phase: str, info: dict) -> None:
        time.sleep(0)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    gc.callbacks.append(release_the_gil)
    try:
        yield
    finally:
        gc.callbacks.remove(release_the_gil)
        sys.setswitchinterval(interval)


def in_threads(work: Callable[[int], Any], n: int = THREADS) -> list[Any]:
    """``work(i)`` in ``n`` threads started together; an exception is returned as the result."""
    results: list[Any] = [None] * n
    start = threading.Barrier(n)

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = work(i)
        except Exception as exc:  # the rule is broken: report it, do not lose it in a thread
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


TINY_MEMO_BYTES = 4096  # a few dozen entries: nearly every insert evicts, so eviction runs under contention


@pytest.fixture
def tiny_memos(monkeypatch):
    """Every evaluator memo of the embedded world shrunk, so the stepping test evicts under contention."""
    index = world_index.index_for(gymnasium.make("TravelPlanner-v0").unwrapped.world)
    memos = [index._contains, index._flights, index._routes, index._costs, *index._venues.values(),
             *index.memo.values()]
    for memo in memos:
        memo.clear()
        monkeypatch.setattr(memo, "max_bytes", TINY_MEMO_BYTES)
    yield
    for memo in memos:
        memo.clear()


def test_the_shared_evaluator_memos_survive_eviction_from_many_threads(monkeypatch):
    env = gymnasium.make("TravelPlanner-v0")
    index = world_index.index_for(env.unwrapped.world)
    memo = index.memo["venue"]
    monkeypatch.setattr(memo, "max_bytes", TINY_MEMO_BYTES)

    def fill(i: int) -> int:
        for k in range(3000):
            assert index.remember("venue", ("thread", i, k), k) == k
        return 3000

    with contention():
        results = in_threads(fill)
    assert results == [3000] * THREADS
    assert 0 < memo.nbytes <= TINY_MEMO_BYTES
    assert memo.nbytes == sum(_memo._cost(key, value) for key, value in memo.items())  # the count stayed exact
    memo.clear()


def degenerate_plans(gold: list[dict[str, Any]], thread: int) -> list[str]:
    """Plan texts a policy writes: Python literals (parsed by ``ast``), too deep, too long, cut off,
    of the wrong shape; and the gold plan with venues of its own, so the memos fill and evict."""
    renamed = []
    for k in range(6):
        plan = copy.deepcopy(gold)
        for day in plan:
            for field in ("breakfast", "lunch", "dinner", "attraction", "accommodation"):
                name, comma, city = str(day.get(field, "-")).rpartition(", ")
                if comma:
                    day[field] = f"{name} {thread}-{k}, {city}"
        renamed.append(repr(plan))
    return [*renamed, repr(gold), "[" * 150 + "]" * 150, "[" + "{'days': 1}, " * 4_900 + "]",
            repr(gold)[:-40], "{'days': 1, 'current_city': 'from A to B'}", "[" + "(" * 90 + "1" + ")" * 90 + "]",
            "['" + "x" * 50_000 + "']", "[{'days': 10**10**3}]", "[" + "[1, 2], " * 2_000 + "]"]


def play(plans: list[str]) -> list[tuple[str, float, Any]]:
    env = gymnasium.make("TravelPlanner-v0", tasks="train")
    task_index = _longest_task(env)
    outcomes = []
    for text in plans:
        env.reset(seed=0, options={"task_index": task_index})
        observation, reward, _, _, info = env.step(f"Finish[{text}]")
        outcomes.append((observation, reward, (info.get("error") or {}).get("code")))
    env.close()
    return outcomes


def _longest_task(env: Any) -> int:
    queries = env.unwrapped.tasks
    return max(range(len(queries)), key=lambda i: len(queries[i].annotated_plan or ()))


def test_many_threads_stepping_travelplanner_with_degenerate_plans_match_one_thread(tiny_memos):
    env = gymnasium.make("TravelPlanner-v0", tasks="train")
    gold = [dict(day) for day in env.unwrapped.tasks[_longest_task(env)].annotated_plan]
    texts = [degenerate_plans(gold, i) for i in range(THREADS)]
    alone = [play(plans) for plans in texts]
    assert {code for outcomes in alone for _, _, code in outcomes} >= {None, "invalid_plan"}

    with contention():
        together = in_threads(lambda i: play(texts[i]))
    for i in range(THREADS):
        assert together[i] == alone[i], f"thread {i}: {together[i]!r}"


def test_agentgym_run_and_the_trainers_rollouts_share_the_process_env_threads():
    """``agentgym run`` and ``rollouts.play_rollout`` (verl's loop, TRL's rollouts) step envs on one pool."""
    from agentgym.agents.base import in_env_thread
    from agentgym.integrations import rollouts

    assert rollouts.run_in_env_thread is _env_threads.run_in_env_thread

    async def names() -> tuple[str, str]:
        return (await in_env_thread(lambda: threading.current_thread().name),
                await rollouts.run_in_env_thread(lambda: threading.current_thread().name))

    for name in asyncio.run(names()):
        assert name.startswith("agentgym-env")
    assert _env_threads.env_executor() is _env_threads.env_executor(max_workers=1)
