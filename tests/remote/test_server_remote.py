"""RemoteEnv and AsyncRemoteEnv against a real env server on a loopback socket.

The core promise: the same seed and actions give identical observations, rewards, flags and
infos locally and remotely, for whole episodes, any action text, and after a lost reply.
"""

from __future__ import annotations

import asyncio
import json
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_helpers import OTHER_TOKEN, TOKEN, DroppingProxy, auth

import agentgym  # noqa: F401  (registers the env ids)
from agentgym.remote._connection import Endpoint, SyncConnection
from agentgym.envs.travelplanner.scripted import gold_plan_actions
from agentgym.errors import (ActionTypeError, ConfigError, RemoteEnvError, RequestRejected, ResetNeeded,
                             ServerUnavailable, SessionNotFound, Unauthorized)
from agentgym.remote import AsyncRemoteEnv, RemoteEnv

NOISE = ["", "Bogus[1]", "CitySearch[Atlantis]", "FlightSearch[A, B]", "\ud800", "é中🙂\x00", "x" * 5000]


def both(server, env_id="TravelPlanner-v0", **kwargs):
    return gymnasium.make(env_id, **kwargs), RemoteEnv(server.url, env_id, env_kwargs=kwargs, token=TOKEN)


@pytest.mark.parametrize("kwargs", [
    {"action_format": "react"},
    {"action_format": "json"},
    {"action_format": "json", "mode": "sole-planning"},
    {"reward": "planner_r1/dense", "max_turns": 40},
])
def test_whole_travelplanner_episodes_are_identical_locally_and_remotely(live_server, kwargs):
    local, remote = both(live_server, **kwargs)
    for index in (0, 3):
        first = local.reset(seed=index, options={"task_index": index})
        assert remote.reset(seed=index, options={"task_index": index}) == first
        query = local.unwrapped.task
        actions = NOISE + gold_plan_actions(query, local.unwrapped.action_format,
                                                 tools=local.unwrapped.mode == "tool-use")
        for action in actions:
            expected = local.step(action)
            assert remote.step(action) == expected, action
            if expected[2] or expected[3]:
                break
        assert expected[2] and expected[4]["report"]["final_pass"] is True
    remote.close()


def test_searchqa_episodes_are_identical_locally_and_remotely(live_server):
    local, remote = both(live_server, "SearchQA-v0", action_format="json")
    assert remote.reset(seed=7) == local.reset(seed=7)
    for action in ['<tool_call>{"name": "search", "arguments": {"query": "born"}}</tool_call>',
                   "<search>x</search>", "<answer>nobody</answer>"]:
        expected = local.step(action)
        assert remote.step(action) == expected
    assert expected[2] is True and "f1" in expected[4]["report"]
    remote.close()


@pytest.fixture(scope="module")
def pair(live_server):
    local, remote = both(live_server)
    yield local, remote
    remote.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31 - 1), actions=st.lists(st.text(max_size=300), min_size=1, max_size=4))
def test_any_action_text_round_trips_identically(pair, seed, actions):
    local, remote = pair
    assert remote.reset(seed=seed) == local.reset(seed=seed)
    for action in actions:
        expected = local.step(action)
        got = remote.step(action)
        assert got == expected
        assert json.dumps(got[4], sort_keys=True) == json.dumps(expected[4], sort_keys=True)
        if expected[2] or expected[3]:
            break


def test_remote_env_passes_gymnasiums_env_checker(live_server):
    remote = RemoteEnv(live_server.url, "TravelPlanner-v0", token=TOKEN, render_mode="ansi")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not having a spec.*")
        warnings.filterwarnings("ignore", message=".*No render fps.*")
        check_env(remote)
    observation, _ = remote.reset(seed=0)
    assert remote.render() == observation
    remote.close()
    remote.close()  # closing twice is allowed


def test_async_remote_env_matches_the_local_env(live_server):
    local = gymnasium.make("TravelPlanner-v0", action_format="json")

    async def play():
        async with AsyncRemoteEnv(live_server.url, "TravelPlanner-v0", env_kwargs={"action_format": "json"},
                                  token=TOKEN) as remote:
            assert remote.action_space.max_length == 1_000_000 and remote.description.tools
            assert await remote.reset(seed=2) == local.reset(seed=2)
            for action in NOISE + gold_plan_actions(local.unwrapped.task, "json"):
                expected = local.step(action)
                assert await remote.step(action) == expected
                if expected[2]:
                    return expected

    assert asyncio.run(play())[1] == 1.0


def test_env_errors_raise_the_same_exception_remotely(live_server):
    with pytest.raises(ConfigError) as bad_kwarg:
        RemoteEnv(live_server.url, "TravelPlanner-v0", env_kwargs={"mode": "nope"}, token=TOKEN)
    assert bad_kwarg.value.field == "mode"
    remote = RemoteEnv(live_server.url, "TravelPlanner-v0", token=TOKEN)
    with pytest.raises(ResetNeeded):
        remote.step("CitySearch[Texas]")
    remote.reset(seed=0)
    with pytest.raises(ActionTypeError):
        remote.step(42)
    with pytest.raises(ConfigError):
        remote.reset(options={"task_index": 10**6})
    remote.close()
    with pytest.raises(SessionNotFound):
        remote.step("x")


def test_tokens_are_checked_and_sessions_are_private_over_the_socket(live_server):
    with pytest.raises(Unauthorized):
        RemoteEnv(live_server.url, "TravelPlanner-v0")
    with pytest.raises(Unauthorized):
        RemoteEnv(live_server.url, "TravelPlanner-v0", token="guess")
    alice = RemoteEnv(live_server.url, "TravelPlanner-v0", token=TOKEN)
    alice.reset(seed=0)
    connection = SyncConnection(Endpoint.parse(live_server.url), timeout=10)
    path = f"/v1/sessions/{alice.session_id}/step"
    stolen = connection.request("POST", path, b'{"action": "CitySearch[Texas]"}', auth(OTHER_TOKEN))
    connection.close()
    assert stolen.status == 404 and json.loads(stolen.body)["error"]["type"] == "SessionNotFound"
    assert alice.step("CitySearch[Texas]")[4]["turn"] == 1  # bob's attempt did not step it
    alice.close()


def test_oversized_requests_are_refused_by_the_client_and_by_the_server(serve):
    server = serve(max_request_bytes=1024)
    remote = RemoteEnv(server.url, "TravelPlanner-v0", token=TOKEN)
    remote.reset(seed=0)
    with pytest.raises(RequestRejected) as refused:
        remote.step("x" * 5000)
    assert refused.value.status == 413
    connection = SyncConnection(Endpoint.parse(server.url), timeout=10)
    reply = connection.request("POST", f"/v1/sessions/{remote.session_id}/step",
                               json.dumps({"action": "y" * 2000}).encode(), auth())
    assert reply.status == 413
    remote.close()


def test_a_reply_lost_after_the_server_stepped_is_retried_without_stepping_twice(live_server):
    proxy = DroppingProxy(live_server.port)
    local, remote = gymnasium.make("TravelPlanner-v0"), RemoteEnv(proxy.url, "TravelPlanner-v0", token=TOKEN,
                                                                     backoff_s=0.01)
    assert remote.reset(seed=1) == local.reset(seed=1)
    for action in ["CitySearch[Texas]", "Bogus[1]", "NotebookWrite[x]"]:
        proxy.drop_replies = 1
        assert remote.step(action) == local.step(action)
    assert remote.step("CitySearch[Ohio]")[4]["turn"] == 4
    remote.close()
    proxy.close()
    metrics = SyncConnection(Endpoint.parse(live_server.url), timeout=10).request("GET", "/metrics", None, auth())
    replayed = [line for line in metrics.body.decode().splitlines() if line.startswith("agentgym_replayed_total")]
    assert int(replayed[0].split()[1]) >= 3


def test_a_server_that_is_not_there_or_full_raises_server_unavailable(serve):
    with pytest.raises(ServerUnavailable):
        RemoteEnv("http://127.0.0.1:9", "TravelPlanner-v0", retries=1, backoff_s=0.01)
    server = serve(max_sessions=1)
    first = RemoteEnv(server.url, "TravelPlanner-v0", token=TOKEN)
    with pytest.raises(ServerUnavailable) as full:
        RemoteEnv(server.url, "TravelPlanner-v0", token=TOKEN, retries=0)
    assert full.value.status == 503 and isinstance(full.value, RemoteEnvError)
    first.close()
    RemoteEnv(server.url, "TravelPlanner-v0", token=TOKEN).close()  # the slot is free again


@pytest.mark.parametrize("env_id, kwargs", [
    ("SearchQA-v0", {}), ("SearchQA-v0", {"action_format": "json"}), ("SearchQA-v0", {"action_format": "search-r1"}),
    ("TravelPlanner-v0", {"action_format": "json"}), ("TravelPlanner-v0", {"action_format": "react"}),
])
def test_remote_envs_stop_model_turns_where_the_local_env_does(live_server, env_id, kwargs):
    """The verl agent loop stops each turn where ``env.unwrapped`` declares (stop strings, and
    Search-R1's cut rule); a remote env that declared none let a Search-R1 model write past
    ``</search>`` and make up the results."""
    local, remote = both(live_server, env_id, **kwargs)

    def rule(env):
        return env.turn_cut

    expected = rule(local.unwrapped)
    assert rule(remote.unwrapped) == expected  # the attributes the loop reads
    remote.close()

    async def opened():
        async with AsyncRemoteEnv(live_server.url, env_id, env_kwargs=kwargs, token=TOKEN) as env:
            return rule(env)

    assert asyncio.run(opened()) == expected


def _newer_server(app):
    """The real app, with a field this client does not know added to every JSON object it replies."""
    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        start = {}

        async def relay(message):
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body = message.get("body", b"")
            if body.startswith(b"{") and not message.get("more_body"):
                body = json.dumps({**json.loads(body), "added_in_a_later_version": [1, 2]}).encode()
            headers = [(k, str(len(body)).encode() if k.lower() == b"content-length" else v)
                       for k, v in start["headers"]]
            await send({**start, "headers": headers})
            await send({**message, "body": body})

        await app(scope, receive, relay)
    return wrapped


def test_a_client_reads_a_newer_servers_replies_and_requests_stay_strict():
    """Env servers and trainers are upgraded at different times: a reply may carry fields this
    client does not know (the stop strings were one), while the server still refuses unknown
    request fields, as the trust boundary it is."""
    from agentgym.server import create_app
    from agentgym.remote.protocol import CreateSession, decode
    from agentgym.server.live_server import LiveServer
    from server_helpers import settings

    with LiveServer(_newer_server(create_app(settings()))) as server:
        env = RemoteEnv(server.url, "SearchQA-v0", token=TOKEN)
        observation, _ = env.reset(seed=3)
        assert observation and env.step("<answer>x</answer>")[2] is True
        env.close()
    with pytest.raises(ValueError, match="added_in_a_later_version"):
        decode(json.dumps({"env_id": "SearchQA-v0", "added_in_a_later_version": 1}).encode(), CreateSession)
