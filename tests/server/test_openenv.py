"""The OpenEnv front door: OpenEnv's own server code, played with OpenEnv's own client on loopback.

Each episode is played through OpenEnv and, step for step, through a local env with the same
seed and actions: the observations, rewards, flags and evaluations must be the same.
"""

from __future__ import annotations

import asyncio
import json

import gymnasium
import pytest

pytest.importorskip("openenv.core", reason="the OpenEnv front door needs openenv-core: pip install 'agentgym-rl[openenv]'")

from openenv.core import GenericEnvClient  # noqa: E402
from server_helpers import settings  # noqa: E402

from agentgym.envs.travelplanner.scripted import gold_plan_actions  # noqa: E402
from agentgym.server.openenv_app import AgentgymAction, AgentgymEnvClient, create_openenv_app  # noqa: E402
from agentgym.server.live_server import LiveServer  # noqa: E402


@pytest.fixture(scope="module")
def openenv_server():
    with LiveServer(create_openenv_app(settings(env_ids=("TravelPlanner-v0", "SearchQA-v0")),
                                       "TravelPlanner-v0")) as tp, \
         LiveServer(create_openenv_app(settings(env_ids=("SearchQA-v0",)), "SearchQA-v0")) as qa:
        yield {"TravelPlanner-v0": tp.url, "SearchQA-v0": qa.url}


async def _play(url: str, env_id: str, index: int, actions_for) -> None:
    local = gymnasium.make(env_id, action_format="json")
    expected, _ = local.reset(seed=index, options={"task_index": index})
    async with AgentgymEnvClient(base_url=url) as env:
        result = await env.reset(seed=index, env_kwargs={"action_format": "json"}, options={"task_index": index})
        assert result.observation.text == expected and not result.done
        for action in actions_for(local.unwrapped):
            result = await env.step(AgentgymAction(text=action))
            observation, reward, terminated, truncated, info = local.step(action)
            assert result.observation.text == observation
            assert (result.reward, result.done, result.observation.truncated) == (reward, terminated or truncated,
                                                                                 truncated)
            assert result.observation.info == json.loads(json.dumps(info))
        assert result.done and result.reward == 1.0
        state = await env.state()
        assert state.env_id == env_id and state.step_count == len(actions_for(local.unwrapped))


def test_openenv_client_plays_a_travelplanner_and_a_searchqa_episode(openenv_server):
    def plan(env):
        return gold_plan_actions(env.task, "json")

    def search_then_answer(env):
        question = env.task
        return ['<tool_call>{"name": "search", "arguments": {"query": %s}}</tool_call>' % json.dumps(question.text),
                f"<answer>{question.golden_answers[0]}</answer>"]

    async def main() -> None:
        await asyncio.gather(_play(openenv_server["TravelPlanner-v0"], "TravelPlanner-v0", 4, plan),  # concurrent
                             _play(openenv_server["TravelPlanner-v0"], "TravelPlanner-v0", 5, plan))  # sessions
        await _play(openenv_server["SearchQA-v0"], "SearchQA-v0", 2, search_then_answer)

    asyncio.run(main())


def test_openenv_keeps_the_trust_boundary(openenv_server):
    async def main() -> None:
        async with GenericEnvClient(base_url=openenv_server["SearchQA-v0"]) as env:
            for arguments in ({"env_kwargs": {"retriever": "http://169.254.169.254/"}},
                              {"env_kwargs": {"questions": "/etc/passwd"}},
                              {"options": {"cache_dir": "/tmp"}},
                              {"preset": "not-a-preset"}):
                with pytest.raises(Exception, match="ConfigError|not allowed|expected"):  # noqa: B017
                    await env.reset(**arguments)
            result = await env.reset(seed=0)  # the session serves on after refusals
            assert "Question:" in result.observation["text"]

    asyncio.run(main())


# -- OpenEnv's HTTP routes (issue 30, item 5) -------------------------------------------------
@pytest.fixture
def server_log():
    """What uvicorn and the server logged while the test ran (uvicorn's loggers do not reach the root's)."""
    import logging

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "agentgym.server")]
    for logger in loggers:
        logger.addHandler(handler)
    yield records
    for logger in loggers:
        logger.removeHandler(handler)


def test_http_step_plays_a_one_step_episode(openenv_server):
    """OpenEnv's HTTP /step builds a fresh environment per request; it answered 500 (step before reset)."""
    import httpx

    local = gymnasium.make("SearchQA-v0")
    local.reset(seed=3, options={"task_index": 2})
    action = f"<answer>{local.unwrapped.task.golden_answers[0]}</answer>"
    observation, reward, terminated, truncated, info = local.step(action)
    reply = httpx.post(openenv_server["SearchQA-v0"] + "/step", timeout=30,
                       json={"action": {"text": action}, "seed": 3, "options": {"task_index": 2}})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["observation"]["text"] == observation and body["reward"] == reward == 1.0 and body["done"]
    assert body["observation"]["info"]["report"] == json.loads(json.dumps(info["report"]))


@pytest.mark.parametrize(("route", "body", "field"), [
    ("/reset", {"env_kwargs": {"retriever": "http://169.254.169.254/"}}, "retriever"),
    ("/reset", {"options": {"cache_dir": "/tmp"}}, "options.cache_dir"),
    ("/reset", {"preset": "not-a-preset"}, "preset"),
    ("/reset", {"sead": 0}, "reset"),
    ("/step", {"action": {"text": "x"}, "env_kwargs": {"tasks": "/etc/passwd"}}, "tasks"),
])
def test_http_refusals_are_400_naming_the_field_without_a_traceback(openenv_server, server_log, route, body, field):
    """They answered 500 with a traceback in the log (WebSocket answered them cleanly)."""
    import httpx

    reply = httpx.post(openenv_server["SearchQA-v0"] + route, json=body, timeout=30)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "ConfigError" and error["message"].startswith(f"{field}=") and reply.json()["detail"]
    assert not [r for r in server_log if r.exc_info], [r.getMessage() for r in server_log]


def test_http_bodies_get_serves_cap(openenv_server):
    """One 200 MB POST /reset was read whole (the server went from 347 to 709 MB)."""
    import socket

    import httpx

    host, port = openenv_server["SearchQA-v0"].removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 200000000\r\n\r\n" + b'{"seed": ' + b" " * 60_000)
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413") and b"max_request_bytes" in reply

    def streamed():
        yield b'{"seed": 0, "options": {"task": "'
        for _ in range(200):  # 10 MB without a Content-Length, past the 8 MiB cap
            yield b"x" * 50_000
        yield b'"}}'

    refused = httpx.post(openenv_server["SearchQA-v0"] + "/reset", content=streamed(), timeout=30)
    assert refused.status_code == 413 and "max_request_bytes" in refused.json()["detail"]
    assert httpx.post(openenv_server["SearchQA-v0"] + "/reset", json={"seed": 0}, timeout=30).status_code == 200
