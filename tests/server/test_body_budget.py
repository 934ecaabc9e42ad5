"""The server's body budget: whatever the requests, the bytes held never pass the limit, no client's
claims pass its share, and everything comes back."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.server.budget import BodyBudget
from agentgym.server._signals import ApiError


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(1, 64), share=st.integers(1, 64),
       requests=st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 100), st.integers(1, 5),
                                   st.floats(0, 0.004)), min_size=1, max_size=30))
def test_held_bytes_and_claims_stay_within_their_limits_and_all_come_back(limit, share, requests):
    budget = BodyBudget(limit, share, wait_s=0.05)
    peak_used, peak_claimed, outcomes = [0], [0], []

    async def request(owner: str, size: int, chunks: int, pause: float) -> None:
        hold = budget.hold(owner)
        try:
            await hold.claim(size)
            for i in range(1, chunks + 1):  # the body arrives in pieces
                await hold.receive(size * i // chunks)
                peak_used[0] = max(peak_used[0], budget.used)
                peak_claimed[0] = max(peak_claimed[0], max(budget.claimed.values()))
                await asyncio.sleep(pause)
            outcomes.append("read")
        except ApiError as refused:
            outcomes.append(refused.kind)
        finally:
            hold.release()

    async def main() -> None:
        await asyncio.gather(*(request(*r) for r in requests))

    asyncio.run(main())
    assert peak_used[0] <= limit and peak_claimed[0] <= share
    assert budget.used == 0 and not budget.claimed
    assert set(outcomes) <= {"read", "TooManyRequests", "ServerBusy"}
    if len(requests) == 1:
        assert outcomes == ["read"]  # a lone request always fits, however large


def test_a_client_waits_for_its_own_share_then_gets_429_while_another_client_reads():
    async def main() -> None:
        budget = BodyBudget(100, 60, wait_s=0.1)
        dripping = budget.hold("a")
        await dripping.claim(60)  # declares 60 and sends 1 byte: it holds 1 byte of the budget
        await dripping.receive(1)
        with pytest.raises(ApiError) as raised:
            await budget.hold("a").claim(10)
        assert raised.value.kind == "TooManyRequests" and raised.value.status == 429
        other = budget.hold("b")
        await other.claim(60)
        await other.receive(60)  # room: the dripper holds what it sent, not what it declared
        assert budget.used == 61
        with pytest.raises(ApiError) as raised:
            await budget.hold("c").receive(50)
        assert raised.value.kind == "ServerBusy" and raised.value.status == 503
        asyncio.get_running_loop().call_later(0.02, other.release)
        late = budget.hold("c")
        await late.receive(50)  # room comes within its wait
        for hold in (dripping, late):
            hold.release()
        assert budget.used == 0 and not budget.claimed

    asyncio.run(main())
