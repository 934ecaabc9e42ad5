"""The env server's routes, limits and isolation, driven in-process through httpx's ASGI transport."""

from __future__ import annotations

import json

from server_helpers import OTHER_TOKEN, SLEEPY, TOKEN, asgi, auth, settings

from agentgym.server import create_app

SESSIONS = "/v1/sessions"


async def _open(client, env_id: str = "TravelPlanner-v0", token: str = TOKEN, **kwargs) -> str:
    reply = await client.post(SESSIONS, json={"env_id": env_id, "kwargs": kwargs}, headers=auth(token))
    assert reply.status_code == 201, reply.text
    return reply.json()["session_id"]


def _error(reply) -> tuple[int, str]:
    return reply.status_code, reply.json()["error"]["type"]


def test_a_session_lives_from_create_to_close():
    async def scenario(client):
        created = await client.post(SESSIONS, json={"env_id": "TravelPlanner-v0", "kwargs": {"action_format": "json"}},
                                    headers=auth())
        assert created.status_code == 201
        description = created.json()
        assert description["action_format"] == "json" and len(description["tools"]) == 7
        assert description["max_action_chars"] == 1_000_000 and description["render_modes"] == ["ansi"]
        path = f"{SESSIONS}/{description['session_id']}"
        reset = await client.post(path + "/reset", json={"seed": 0}, headers=auth())
        assert reset.status_code == 200 and reset.json()["info"]["turn"] == 0
        step = await client.post(path + "/step", json={"action": "nonsense"}, headers=auth())
        assert step.status_code == 200
        assert step.json()["info"]["error"]["code"] == "unparseable_action"
        assert (await client.get(path, headers=auth())).json() == description
        assert (await client.delete(path, headers=auth())).json() == {"closed": True}
        return _error(await client.post(path + "/step", json={"action": "x"}, headers=auth()))

    assert asgi(create_app(settings()), scenario) == (404, "SessionNotFound")


def test_requests_without_a_valid_token_get_401_but_health_is_open():
    async def scenario(client):
        body = {"env_id": "TravelPlanner-v0"}
        results = [_error(await client.post(SESSIONS, json=body)),
                   _error(await client.post(SESSIONS, json=body, headers=auth("wrong"))),
                   _error(await client.post(SESSIONS, json=body, headers={"Authorization": f"Basic {TOKEN}"})),
                   _error(await client.get("/metrics")),
                   _error(await client.get("/v1/envs"))]
        unauthorized = await client.post(SESSIONS, json=body)
        health = await client.get("/health")
        return results, unauthorized.headers.get("www-authenticate"), health.status_code

    results, challenge, health = asgi(create_app(settings()), scenario)
    assert results == [(401, "Unauthorized")] * 5
    assert challenge == "Bearer" and health == 200


def test_another_clients_session_is_indistinguishable_from_a_missing_one():
    async def scenario(client):
        session = await _open(client, token=TOKEN)
        path = f"{SESSIONS}/{session}"
        await client.post(path + "/reset", json={"seed": 0}, headers=auth(TOKEN))
        theirs = [await client.post(path + "/reset", json={}, headers=auth(OTHER_TOKEN)),
                  await client.post(path + "/step", json={"action": "x"}, headers=auth(OTHER_TOKEN)),
                  await client.get(path, headers=auth(OTHER_TOKEN)),
                  await client.delete(path, headers=auth(OTHER_TOKEN))]
        missing = await client.get(f"{SESSIONS}/no-such-session", headers=auth(OTHER_TOKEN))
        still_mine = await client.post(path + "/step", json={"action": "x"}, headers=auth(TOKEN))
        return [(r.status_code, r.json()) for r in theirs], (missing.status_code, missing.json()), still_mine

    theirs, missing, still_mine = asgi(create_app(settings()), scenario)
    assert all(reply == missing for reply in theirs) and missing[0] == 404
    assert still_mine.status_code == 200 and still_mine.json()["info"]["turn"] == 1


def test_bodies_over_the_size_limit_get_413_declared_or_streamed():
    async def scenario(client):
        session = await _open(client)
        path = f"{SESSIONS}/{session}/step"
        await client.post(f"{SESSIONS}/{session}/reset", json={}, headers=auth())
        declared = await client.post(path, json={"action": "x" * 2000}, headers=auth())

        async def chunks():
            for _ in range(10):
                yield b" " * 300

        streamed = await client.post(path, content=chunks(), headers={**auth(), "content-type": "application/json"})
        fits = await client.post(path, json={"action": "x" * 900}, headers=auth())
        return _error(declared), _error(streamed), fits.status_code

    declared, streamed, fits = asgi(create_app(settings(max_request_bytes=1024)), scenario)
    assert declared == streamed == (413, "RequestTooLarge")
    assert fits == 200


def test_malformed_bodies_get_422_naming_the_problem():
    async def scenario(client):
        session = await _open(client)
        step = f"{SESSIONS}/{session}/step"
        replies = [await client.post(step, content=b"{not json", headers=auth()),
                   await client.post(step, json={"action": 5}, headers=auth()),
                   await client.post(step, json={"action": "x", "extra": 1}, headers=auth()),
                   await client.post(step, json=["action"], headers=auth()),
                   await client.post(SESSIONS, json={"kwargs": {}}, headers=auth())]
        return [(r.status_code, r.json()["error"]) for r in replies]

    replies = asgi(create_app(settings()), scenario)
    assert [status for status, _ in replies] == [422] * 5
    assert "action" in replies[1][1]["message"] and "env_id" in replies[4][1]["message"]


def test_env_errors_come_back_with_their_own_type():
    async def scenario(client):
        bad_kwarg = await client.post(SESSIONS, json={"env_id": "TravelPlanner-v0", "kwargs": {"mode": "x"}},
                                      headers=auth())
        unknown_kwarg = await client.post(SESSIONS, json={"env_id": "TravelPlanner-v0", "kwargs": {"colour": 1}},
                                          headers=auth())
        not_served = await client.post(SESSIONS, json={"env_id": "CartPole-v1"}, headers=auth())
        session = await _open(client)
        path = f"{SESSIONS}/{session}"
        before_reset = await client.post(path + "/step", json={"action": "x"}, headers=auth())
        await client.post(path + "/reset", json={"seed": 0}, headers=auth())
        over = await client.post(path + "/step", json={"action": "GiveUp[tired]"}, headers=auth())
        after_end = await client.post(path + "/step", json={"action": "x"}, headers=auth())
        bad_option = await client.post(path + "/reset", json={"options": {"task_index": -1}}, headers=auth())
        return bad_kwarg, unknown_kwarg, not_served, before_reset, over, after_end, bad_option

    bad_kwarg, unknown_kwarg, not_served, before_reset, over, after_end, bad_option = asgi(
        create_app(settings()), scenario)
    assert _error(bad_kwarg) == (400, "ConfigError") and bad_kwarg.json()["error"]["field"] == "mode"
    assert _error(unknown_kwarg) == (400, "ConfigError") and "colour" in unknown_kwarg.json()["error"]["message"]
    assert _error(not_served) == (400, "ConfigError")
    assert _error(before_reset) == (409, "ResetNeeded")
    assert over.json()["terminated"] is True
    assert _error(after_end) == (409, "ResetNeeded")
    assert _error(bad_option) == (400, "ConfigError")


def test_a_full_server_answers_503_with_retry_after_until_a_session_closes():
    async def scenario(client):
        first, _ = await _open(client), await _open(client)
        full = await client.post(SESSIONS, json={"env_id": "TravelPlanner-v0"}, headers=auth())
        await client.delete(f"{SESSIONS}/{first}", headers=auth())
        after_close = await client.post(SESSIONS, json={"env_id": "TravelPlanner-v0"}, headers=auth())
        return full, after_close.status_code

    full, after_close = asgi(create_app(settings(max_sessions=2, max_sessions_per_client=2)), scenario)
    assert _error(full) == (503, "ServerFull") and full.headers["retry-after"] == "1"
    assert after_close == 201


def test_the_per_client_limit_leaves_room_for_other_clients():
    async def scenario(client):
        await _open(client, token=TOKEN)
        mine = await client.post(SESSIONS, json={"env_id": "TravelPlanner-v0"}, headers=auth(TOKEN))
        theirs = await client.post(SESSIONS, json={"env_id": "TravelPlanner-v0"}, headers=auth(OTHER_TOKEN))
        return _error(mine), theirs.status_code

    mine, theirs = asgi(create_app(settings(max_sessions=10, max_sessions_per_client=1)), scenario)
    assert mine == (503, "ServerFull") and theirs == 201


def test_idle_sessions_expire_after_the_ttl_and_free_their_slots():
    now = [1000.0]
    app = create_app(settings(session_ttl_s=60, max_sessions=3, max_sessions_per_client=3), clock=lambda: now[0])
    server = app.state.server

    async def scenario(client):
        idle = [await _open(client) for _ in range(2)]
        now[0] += 50
        busy = await _open(client)
        now[0] += 20  # the first two are 70 s idle, the third 20 s
        expired = server.sweep()
        gone = [(await client.get(f"{SESSIONS}/{s}", headers=auth())).status_code for s in idle]
        alive = (await client.get(f"{SESSIONS}/{busy}", headers=auth())).status_code
        for _ in range(2):
            await _open(client)
        now[0] += 61
        # full of idle sessions: a create expires them on the spot instead of answering 503
        created = (await client.post(SESSIONS, json={"env_id": "TravelPlanner-v0"}, headers=auth())).status_code
        metrics = (await client.get("/metrics", headers=auth())).text
        return expired, gone, alive, created, metrics

    expired, gone, alive, created, metrics = asgi(app, scenario)
    assert expired == 2 and gone == [404, 404] and alive == 200 and created == 201
    assert 'agentgym_sessions_closed_total{reason="ttl"} 5' in metrics
    assert len(server.pool) == 1


def test_a_retried_call_is_answered_from_the_stored_reply_not_applied_twice():
    async def scenario(client):
        path = f"{SESSIONS}/{await _open(client)}"
        await client.post(path + "/reset", json={"seed": 0, "seq": 1}, headers=auth())
        first = await client.post(path + "/step", json={"action": "CitySearch[Texas]", "seq": 2}, headers=auth())
        retried = await client.post(path + "/step", json={"action": "CitySearch[Texas]", "seq": 2}, headers=auth())
        skipped = await client.post(path + "/step", json={"action": "x", "seq": 9}, headers=auth())
        following = await client.post(path + "/step", json={"action": "x", "seq": 3}, headers=auth())
        return first, retried, skipped, following

    first, retried, skipped, following = asgi(create_app(settings()), scenario)
    assert retried.content == first.content and first.json()["info"]["turn"] == 1
    assert _error(skipped) == (409, "OutOfOrder")
    assert following.json()["info"]["turn"] == 2


def test_an_overrunning_inline_step_is_interrupted_and_its_session_closed():
    app = create_app(settings(request_timeout_s=0.2, env_calls="auto"))

    async def scenario(client):
        stuck, other = await _open(client, SLEEPY), await _open(client, SLEEPY)
        for session in (stuck, other):
            await client.post(f"{SESSIONS}/{session}/reset", json={}, headers=auth())
        timed_out = await client.post(f"{SESSIONS}/{stuck}/step", json={"action": "spin 30"}, headers=auth())
        after = await client.post(f"{SESSIONS}/{stuck}/step", json={"action": "x"}, headers=auth())
        unaffected = await client.post(f"{SESSIONS}/{other}/step", json={"action": "x"}, headers=auth())
        return _error(timed_out), _error(after), unaffected.json()["observation"]

    timed_out, after, unaffected = asgi(app, scenario)
    assert app.state.server.calls.inline_available  # pytest runs this in the main thread: SIGALRM works
    assert timed_out == (504, "Timeout") and after == (404, "SessionNotFound")
    assert unaffected == "did x"


def test_a_step_in_a_thread_times_out_while_the_thread_finishes_on_its_own():
    app = create_app(settings(request_timeout_s=0.1, env_calls="threads"))

    async def scenario(client):
        session = await _open(client, SLEEPY)
        await client.post(f"{SESSIONS}/{session}/reset", json={}, headers=auth())
        timed_out = await client.post(f"{SESSIONS}/{session}/step", json={"action": "sleep 1"}, headers=auth())
        return _error(timed_out), (await client.get("/metrics", headers=auth())).text

    timed_out, metrics = asgi(app, scenario)
    assert timed_out == (504, "Timeout")
    assert 'agentgym_sessions_closed_total{reason="timeout"} 1' in metrics


def test_a_session_whose_calls_are_slow_moves_off_the_event_loop():
    app = create_app(settings(inline_budget_s=0.01, env_calls="auto"))

    async def scenario(client):
        fast, slow = await _open(client, SLEEPY), await _open(client, SLEEPY)
        for session in (fast, slow):
            await client.post(f"{SESSIONS}/{session}/reset", json={}, headers=auth())
        await client.post(f"{SESSIONS}/{slow}/step", json={"action": "sleep 0.05"}, headers=auth())
        await client.post(f"{SESSIONS}/{fast}/step", json={"action": "x"}, headers=auth())
        return {s.id: s.inline for s in app.state.server.pool.all()}, fast, slow

    inline, fast, slow = asgi(app, scenario)
    assert inline == {fast: True, slow: False}


def test_health_metrics_and_env_list():
    async def scenario(client):
        path = f"{SESSIONS}/{await _open(client)}"
        await client.post(path + "/reset", json={"seed": 0}, headers=auth())
        for _ in range(3):
            await client.post(path + "/step", json={"action": "CitySearch[Texas]"}, headers=auth())
        return ((await client.get("/health")).json(), (await client.get("/metrics", headers=auth())).text,
                (await client.get("/v1/envs", headers=auth())).json())

    health, metrics, envs = asgi(create_app(settings(max_sessions=7)), scenario)
    assert health["status"] == "ok" and health["sessions"] == 1 and health["max_sessions"] == 7
    for line in ("agentgym_sessions_active 1", "agentgym_steps_total 3", "agentgym_resets_total 1",
                 'agentgym_requests_total{route="step",status="200"} 3',
                 'agentgym_request_seconds_count{route="step"} 3'):
        assert line in metrics.splitlines()
    assert envs["env_ids"] == ["TravelPlanner-v0", "SearchQA-v0", SLEEPY]
    assert envs["presets"] == {"TravelPlanner-v0": [], "SearchQA-v0": [], SLEEPY: []}
    assert "planner_r1/dense" in envs["rewards"]


def test_an_env_that_is_not_a_text_env_is_refused():
    async def scenario(client):
        reply = await client.post(SESSIONS, json={"env_id": "CartPole-v1"}, headers=auth())
        return _error(reply), json.loads(reply.content)["error"]["message"]

    error, message = asgi(create_app(settings(env_ids=("CartPole-v1",))), scenario)
    assert error == (400, "ConfigError") and "not a text env" in message
