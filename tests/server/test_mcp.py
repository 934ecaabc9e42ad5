"""The MCP front door, driven by the official SDK's own client over streamable HTTP and stdio.

Each episode is played through MCP tools and, step for step, through a local env with the same
seed and actions: the observations, rewards and evaluations must be the same.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import gymnasium
import pytest

pytest.importorskip("mcp", reason="the MCP front door needs the mcp SDK (pip install 'agentgym-rl[mcp]')")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402
from server_helpers import OTHER_TOKEN, TOKEN, settings  # noqa: E402

from agentgym.envs.travelplanner.scripted import gold_plan_actions  # noqa: E402
from agentgym.server.mcp_app import START_TOOL, create_mcp_app  # noqa: E402
from agentgym.server.live_server import LiveServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _http_client(url: str, token: str = TOKEN) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http))


def _stdio_client(env_id: str) -> Client:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return Client(StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "agentgym.cli", "mcp", env_id, "--env-calls", "threads"]))


_live: dict[str, LiveServer] = {}


@asynccontextmanager
async def _http(env_id: str, **fields: Any):
    server = LiveServer(create_mcp_app(settings(env_ids=(env_id,), **fields), env_id)).start()
    _live[server.url + "/mcp"] = server
    try:
        yield server.url + "/mcp"
    finally:
        server.stop()
        del _live[server.url + "/mcp"]


def _tool_calls(actions: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The env's JSON actions as MCP tool calls."""
    calls = []
    for action in actions:
        if action.startswith("<tool_call>"):
            call = json.loads(action.removeprefix("<tool_call>").removesuffix("</tool_call>"))
            calls.append((call["name"], call["arguments"]))
        else:
            calls.append(("submit_plan", {"plan": action.removeprefix("<answer>").removesuffix("</answer>")}))
    return calls


async def _play_travelplanner(client: Client, index: int) -> None:
    local = gymnasium.make("TravelPlanner-v0", action_format="json")
    observation, _ = local.reset(seed=index, options={"task_index": index})
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert {START_TOOL, "search_flights", "search_cities", "notebook_write", "submit_plan"} <= names
    started = await client.call_tool(START_TOOL, {"seed": index, "options": {"task_index": index}})
    assert not started.is_error and started.content[0].text == observation
    actions = gold_plan_actions(local.unwrapped.task, "json")
    for (name, arguments), action in zip(_tool_calls(actions), actions, strict=True):
        result = await client.call_tool(name, arguments)
        observation, reward, terminated, truncated, info = local.step(action)
        assert not result.is_error, result.content
        assert result.content[0].text == observation
        assert result.structured_content["reward"] == reward
        assert result.structured_content["terminated"] == terminated
    assert terminated and reward == 1.0
    assert result.structured_content["info"]["report"] == info["report"]
    assert info["report"]["final_pass"] is True
    after = await client.call_tool("search_cities", {"state": "Texas"})
    assert after.is_error and "ended" in after.content[0].text  # one episode per MCP session


async def _play_searchqa(client: Client, index: int) -> None:
    local = gymnasium.make("SearchQA-v0", action_format="json")
    observation, _ = local.reset(seed=0, options={"task_index": index})
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert {START_TOOL, "search", "answer"} <= names
    started = await client.call_tool(START_TOOL, {"options": {"task_index": index}, "seed": 0})
    assert started.content[0].text == observation
    question = local.unwrapped.task
    searched = await client.call_tool("search", {"query": question.text})
    observation, *_ = local.step('<tool_call>{"name": "search", "arguments": {"query": %s}}</tool_call>'
                                 % json.dumps(question.text))
    assert searched.content[0].text == observation and not searched.structured_content["terminated"]
    answered = await client.call_tool("answer", {"answer": question.golden_answers[0]})
    _, reward, terminated, _, info = local.step(f"<answer>{question.golden_answers[0]}</answer>")
    assert answered.structured_content["terminated"] and terminated
    assert answered.structured_content["reward"] == reward == 1.0
    assert answered.structured_content["info"]["report"] == info["report"]


def test_mcp_http_plays_travelplanner_and_searchqa_episodes():
    async def main() -> None:
        async with _http("TravelPlanner-v0") as url:
            for index in (0, 1):  # one episode per session: each a new client session
                async with _http_client(url) as client:
                    await _play_travelplanner(client, index)
        async with _http("SearchQA-v0") as url, _http_client(url) as client:
            await _play_searchqa(client, 0)

    asyncio.run(main())


def test_mcp_stdio_plays_travelplanner_and_searchqa_episodes():
    async def main() -> None:
        async with _stdio_client("TravelPlanner-v0") as client:
            await _play_travelplanner(client, 2)
        async with _stdio_client("SearchQA-v0") as client:
            await _play_searchqa(client, 1)

    asyncio.run(main())


def test_mcp_keeps_the_trust_boundary():
    import httpx

    async def main() -> None:
        async with _http("SearchQA-v0") as url:
            refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 headers={"Authorization": "Bearer not-a-token"})
            assert refused.status_code == 401 and refused.headers["connection"] == "close"
            with pytest.raises(Exception):  # noqa: B017 - the SDK's client fails to connect, whatever its error
                async with _http_client(url, token="not-a-token"):
                    pass

    asyncio.run(main())

    async def attacks() -> None:
        async with _http("SearchQA-v0") as url:
            async with _http_client(url, OTHER_TOKEN) as client:
                await refusals(client)
            pool = _live[url].server.config.app.state.server.pool
            for _ in range(50):  # the client's DELETE closes its unfinished episode's env
                if not len(pool):
                    break
                await asyncio.sleep(0.1)
            assert len(pool) == 0

    async def refusals(client: Client) -> None:
        for arguments in ({"kwargs": {"retriever": "http://169.254.169.254/"}},
                          {"kwargs": {"questions": "/etc/passwd"}},
                          {"options": {"cache_dir": "/tmp"}},
                          {"preset": "not-a-preset"},
                          {"seed": "zero"}):
            result = await client.call_tool(START_TOOL, arguments)
            assert result.is_error, arguments
        assert "ConfigError" in result.content[0].text or "seed" in result.content[0].text
        early = await client.call_tool("search", {"query": "x"})
        assert early.is_error and START_TOOL in early.content[0].text
        started = await client.call_tool(START_TOOL, {"kwargs": {"max_turns": 5}})  # may start after refusals
        assert not started.is_error
        again = await client.call_tool(START_TOOL, {})
        assert again.is_error and "already" in again.content[0].text

    asyncio.run(attacks())


@pytest.mark.parametrize("command", [["mcp", "SearchQA-v0", "--transport", "carrier-pigeon"],
                                     ["openenv", "SearchQA-v0", "--host", "0.0.0.0"]])
def test_front_door_commands_refuse_mistakes_in_one_line(command):
    import subprocess

    out = subprocess.run([sys.executable, "-m", "agentgym.cli", *command], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--transport" in out.stderr or "--host" in out.stderr


# -- per-token sessions over HTTP (issue 30, items 2 and 3) -----------------------------------
def _sessions(url: str) -> dict:
    """The SDK's table of open MCP sessions (by id)."""
    return _live[url].server.config.app.state.door.mcp.session_manager._server_instances


async def _open_until_refused(url: str, token: str, stack, attempts: int) -> list[str]:
    outcomes = []
    for _ in range(attempts):
        try:
            await stack.enter_async_context(_http_client(url, token))
            outcomes.append("open")
        except Exception as exc:  # noqa: BLE001 - the SDK's client raises whatever the HTTP error becomes
            outcomes.append(type(exc).__name__)
    return outcomes


def test_one_token_cannot_open_every_mcp_session():
    """With --max-sessions 4, token A's initializes got [200, 200, 200, 503, ...] and token B got 503
    until A's sessions idled out; now each of the two tokens has a share of 2."""
    import contextlib

    import httpx

    async def main() -> None:
        async with _http("SearchQA-v0", max_sessions=4) as url, contextlib.AsyncExitStack() as stack:
            taken = await _open_until_refused(url, TOKEN, stack, 4)  # initialize alone opens a session
            assert taken[:2] == ["open", "open"] and "open" not in taken[2:], taken
            refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                                 headers={"Authorization": f"Bearer {TOKEN}",
                                          "Accept": "application/json, text/event-stream"})
            assert refused.status_code == 429 and "max_sessions_per_client" in refused.json()["error"]["message"]
            assert await _open_until_refused(url, OTHER_TOKEN, stack, 3) == ["open", "open", taken[2]]
            assert len(_sessions(url)) == 4

    asyncio.run(main())


def test_an_mcp_session_answers_only_the_token_that_opened_it():
    """Token B holding A's session id could DELETE it, after which A's episode answered 'Session not found'."""
    import httpx

    async def main() -> None:
        async with _http("SearchQA-v0") as url, _http_client(url, TOKEN) as client:
            started = await client.call_tool(START_TOOL, {"seed": 0, "options": {"task_index": 0}})
            assert not started.is_error
            (session_id,) = _sessions(url)
            stranger = {"Authorization": f"Bearer {OTHER_TOKEN}", "Mcp-Session-Id": session_id,
                        "Accept": "application/json, text/event-stream"}
            call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                    "params": {"name": "answer", "arguments": {"answer": "stolen"}}}
            async with httpx.AsyncClient(timeout=10) as http:
                for request in (http.delete(url, headers=stranger), http.post(url, json=call, headers=stranger),
                                http.get(url, headers=stranger)):
                    refused = await request
                    assert refused.status_code == 404 and "Session not found" in refused.text
            assert session_id in _sessions(url)  # A's session and its episode go on
            searched = await client.call_tool("search", {"query": "capital"})
            assert not searched.is_error and not searched.structured_content["terminated"]

    asyncio.run(main())
