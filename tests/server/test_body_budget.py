"""The server's body budget: whatever the requests, the bytes held never pass the limit, and all come back."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.server.budget import BodyBudget


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(1, 64), sizes=st.lists(st.integers(1, 100), min_size=1, max_size=30),
       holds=st.lists(st.floats(0, 0.004), min_size=30, max_size=30))
def test_held_bytes_never_pass_the_limit_and_all_come_back(limit, sizes, holds):
    budget = BodyBudget(limit, wait_s=0.05)
    peak, refused = [0], [0]

    async def request(size: int, hold: float) -> None:
        held = await budget.reserve(size)
        if not held:
            refused[0] += 1
            return
        assert held == min(size, limit)
        peak[0] = max(peak[0], budget.used)
        await asyncio.sleep(hold)
        budget.release(held)

    async def main() -> None:
        await asyncio.gather(*(request(size, hold) for size, hold in zip(sizes, holds)))

    asyncio.run(main())
    assert peak[0] <= limit and budget.used == 0
    if len(sizes) == 1:
        assert refused[0] == 0  # a lone request always fits, however large


def test_a_request_waits_for_room_then_is_refused():
    async def main() -> tuple[int, int]:
        budget = BodyBudget(10, wait_s=0.1)
        first = await budget.reserve(10)
        refused = await budget.reserve(5)  # nothing is released within its wait
        asyncio.get_running_loop().call_later(0.02, budget.release, first)
        admitted = await budget.reserve(5)  # room comes within its wait
        return refused, admitted

    assert asyncio.run(main()) == (0, 5)
