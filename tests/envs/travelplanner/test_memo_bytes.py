"""Every memo keyed or filled by model text is bounded in bytes, and failed lookups are not kept.

A model can write a megabyte-long city name. A count-bounded cache keeps thousands of them (the
issue measured 389 MB for 2,000 calls locally, 1.16 GB on the server); here memory measured by
``tracemalloc`` must stay flat however long and however many the texts are.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym._memo import Memo, _cost
from agentgym.envs.travelplanner import _plan_text as pt
from agentgym.envs.travelplanner.env import tools_for
from agentgym.envs.travelplanner.evaluation import _commonsense
from agentgym.envs.travelplanner.world.index import index_for


def _retained_mb(fn: Callable[[int], object], n: int) -> float:
    """MB still allocated after calling ``fn(i)`` for ``i`` in ``range(n)`` (results dropped)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            fn(i)
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - before) / 2**20
    finally:
        tracemalloc.stop()


def _long(i: int, size: int = 100_000) -> str:
    return f"{i:08d}" + "x" * size


def test_invalid_city_names_are_not_cached(tiny_world) -> None:
    world, _ = tiny_world
    search = tools_for(world).by_action("AccommodationSearch").run
    result = search(_long(0))
    assert result.error is not None  # an invalid city: the lookup failed
    # 200 distinct 100 kB names would keep ~20 MB (keys and messages) in a count-bounded cache.
    assert _retained_mb(lambda i: search(_long(i)), 200) < 2


def test_successful_lookups_are_still_cached(tiny_world) -> None:
    world, _ = tiny_world
    search = tools_for(world).by_action("RestaurantSearch").run
    city = world.cities[0]
    assert search(city) is search(city)


def test_lookups_that_find_nothing_are_not_kept(tiny_world):
    """GoogleDistanceMatrix answers unknown cities with a message that echoes them: not kept."""
    world, _ = tiny_world
    distance = tools_for(world).by_action("GoogleDistanceMatrix").run
    before = distance.memo.nbytes
    for i in range(50):
        assert "no valid information" in distance(_long(i, 20_000), "Nowhere", "taxi").content
    assert distance.memo.nbytes == before


def test_plan_text_memos_keep_no_long_texts() -> None:
    def read(i: int) -> None:
        text = f"from {_long(i, 50_000)} to Denver, Flight Number: F1"
        pt.from_to(text), pt.before_paren(text), pt.norm(text), pt.strict_route_in(text)
        _commonsense.current_city(text)

    # 300 distinct 50 kB fields, each kept by five memos, would be ~75 MB in count-bounded caches.
    assert _retained_mb(read, 300) < 2


def test_the_evaluator_index_keeps_no_long_texts(tiny_world) -> None:
    world, _ = tiny_world
    ix = index_for(world)
    city = world.cities[0]
    assert _retained_mb(lambda i: ix.venue("restaurants", f"{_long(i, 50_000)}, {city}"), 300) < 8
    ix.clear()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.text(max_size=300)), max_size=200),
       st.integers(2_000, 20_000))
def test_a_memo_never_holds_more_than_its_budget(puts: list[tuple[int, str]], budget: int) -> None:
    memo = Memo(budget, budget // 4)
    for key, value in puts:
        assert memo.put(key, value) is value
        assert memo.nbytes == sum(_cost(k, v) for k, v in memo.items()) <= budget
        if _cost(key, value) <= memo.max_entry_bytes:
            assert memo.get(key) is value  # the newest entry always survives
