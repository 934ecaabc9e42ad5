"""The evaluator's per-world memos stay bounded without dropping everything at once.

A training run streams millions of distinct plans: a memo that is cleared when full makes every
lookup miss right after, and throughput dips each time. A full memo drops its older half instead.
"""

from __future__ import annotations

import pytest

from agentgym._memo import _cost
from agentgym.envs.travelplanner.world import index as world_index
from agentgym.envs.travelplanner.world.index import index_for


def test_a_full_memo_keeps_its_recent_half(tiny_world, monkeypatch: pytest.MonkeyPatch) -> None:
    world, _ = tiny_world
    ix = index_for(world)
    memo = ix.memo["venue"]
    memo.clear()
    monkeypatch.setattr(memo, "max_bytes", 10 * _cost(1, -1))
    for i in range(1, 100):
        ix.remember("venue", i, -i)
        assert len(memo) <= 10
        recent = range(max(1, i - 4), i + 1)  # the last five inserts always survive
        assert all(memo.get(k) == -k for k in recent), (i, sorted(memo))
    ix.memo["venue"].clear()


def test_memoized_lookups_agree_with_fresh_ones(tiny_world, monkeypatch: pytest.MonkeyPatch) -> None:
    world, _ = tiny_world
    ix = index_for(world)
    ix.clear()
    for memo in ix._venues.values():
        monkeypatch.setattr(memo, "max_bytes", 4 * _cost("x" * 40, (None, True)))
    texts = [f"{r.name}, {c}" for c in world.cities for r in world.restaurants(c)][:40] * 3
    want = [world_index._CityNames(world.restaurants(t.rsplit(", ", 1)[1])).contains(t.rsplit(", ", 1)[0]) for t in texts]
    assert [ix.venue("restaurants", t) for t in texts] == want
    ix.clear()
