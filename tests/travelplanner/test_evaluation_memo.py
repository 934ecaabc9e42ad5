"""The evaluator's per-world memos stay bounded without dropping everything at once.

A training run streams millions of distinct plans: a memo that is cleared when full makes every
lookup miss right after, and throughput dips each time. A full memo drops its older half instead.
"""

from __future__ import annotations

import pytest

from agentgym.envs.travelplanner.world import _index
from agentgym.envs.travelplanner.world._index import index_for


def test_a_full_memo_keeps_its_recent_half(tiny_world, monkeypatch: pytest.MonkeyPatch) -> None:
    world, _ = tiny_world
    monkeypatch.setattr(_index, "_MEMO_LIMIT", 10)
    ix = index_for(world)
    ix.memo["venue"].clear()
    for i in range(1, 100):
        ix.remember("venue", i, -i)
        memo = ix.memo["venue"]
        assert len(memo) <= 10
        recent = range(max(1, i - 4), i + 1)  # the last five inserts always survive
        assert all(memo.get(k) == -k for k in recent), (i, sorted(memo))
    ix.memo["venue"].clear()


def test_memoized_lookups_agree_with_fresh_ones(tiny_world, monkeypatch: pytest.MonkeyPatch) -> None:
    world, _ = tiny_world
    monkeypatch.setattr(_index, "_MEMO_LIMIT", 4)
    ix = index_for(world)
    ix.clear()
    texts = [f"{r.name}, {c}" for c in world.cities for r in world.restaurants(c)][:40] * 3
    want = [_index._CityNames(world.restaurants(t.rsplit(", ", 1)[1])).contains(t.rsplit(", ", 1)[0]) for t in texts]
    assert [ix.venue("restaurants", t) for t in texts] == want
    ix.clear()
