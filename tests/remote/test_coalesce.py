"""Coalesced steps (``AsyncRemoteEnv(coalesce=True)``, ``POST /v1/steps``): the same episodes as local
envs, per-step errors inside a batch, and a fallback to single steps when batches fail."""

from __future__ import annotations

import asyncio
import json

import gymnasium
import pytest
from server_helpers import OTHER_TOKEN, SLEEPY, TOKEN

from agentgym.remote._connection import AsyncConnection
from agentgym.envs.travelplanner.scripted import gold_plan_actions
from agentgym.errors import SessionNotFound
from agentgym.remote import AsyncRemoteEnv

NOISE = ["", "Thought: hmm", "FlightSearch[Nowhere]", "\ud800 lone surrogate", "x" * 5000]


@pytest.mark.parametrize("env_calls", ["processes", "auto"])
def test_coalesced_episodes_are_identical_to_local_ones(serve, env_calls):
    live = serve(env_calls=env_calls)

    async def play(index: int) -> None:
        local = gymnasium.make("TravelPlanner-v0")
        async with AsyncRemoteEnv(live.url, "TravelPlanner-v0", token=TOKEN, coalesce=True) as remote:
            assert await remote.reset(seed=index, options={"task_index": index}) == local.reset(
                seed=index, options={"task_index": index})
            for action in NOISE + gold_plan_actions(local.unwrapped.task, "react"):
                expected = local.step(action)
                assert await remote.step(action) == expected, action
                if expected[2] or expected[3]:
                    break
            assert expected[2] and expected[4]["report"]["final_pass"] is True

    async def main() -> None:
        await asyncio.gather(*(play(index) for index in range(8)))  # eight sessions step in the same turns

    asyncio.run(main())
    requests = live.server.config.app.state.server.metrics.requests
    assert requests["steps", 200] > 0 and requests["step", 200] == 0  # every step went in a batch


def test_a_batch_answers_each_step_in_order_with_its_own_error(serve):
    live = serve()

    async def main() -> None:
        mine, theirs = [await AsyncRemoteEnv.create(live.url, SLEEPY, token=t) for t in (TOKEN, OTHER_TOKEN)]
        await mine.reset()
        await theirs.reset()
        conn = AsyncConnection(mine._remote.endpoint, 10)
        body = json.dumps([
            {"session_id": mine.session_id, "step": {"action": "one", "seq": 2}},
            {"session_id": theirs.session_id, "step": {"action": "stolen"}},  # another token's session
            {"session_id": mine.session_id, "step": {"action": "late", "seq": 9}},  # out of order
            {"session_id": "nope", "step": {"action": "x"}},
            {"session_id": mine.session_id, "step": {"action": 5}},  # not a string
        ]).encode()
        reply = await conn.request("POST", "/v1/steps", body, {"Authorization": f"Bearer {TOKEN}"})
        assert reply.status == 200
        results = json.loads(reply.body)
        assert [status for status, _ in results] == [200, 404, 409, 404, 422]
        assert results[0][1]["observation"] == "did one"
        assert [r[1]["error"]["type"] for r in results[1:]] == ["SessionNotFound", "OutOfOrder", "SessionNotFound",
                                                                "InvalidBody"]
        bad = await conn.request("POST", "/v1/steps", b'{"not": "a batch"}', {"Authorization": f"Bearer {TOKEN}"})
        assert bad.status == 422
        conn.close()
        for env in (mine, theirs):
            await env.close()

    asyncio.run(main())


def test_steps_fall_back_to_single_requests_when_a_server_has_no_batch_route(serve, monkeypatch):
    live = serve()
    routes = live.server.config.app.router.routes
    monkeypatch.setattr(live.server.config.app.router, "routes", [r for r in routes if r.path != "/v1/steps"])

    async def main() -> None:
        async with AsyncRemoteEnv(live.url, SLEEPY, token=TOKEN, coalesce=True) as env:
            await env.reset()
            assert (await env.step("a"))[0] == "did a"
            assert (await env.step("b"))[0] == "did b"
        with pytest.raises(SessionNotFound):
            await env.step("closed")

    asyncio.run(main())
