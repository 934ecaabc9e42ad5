"""Chat-agent fixtures: a chat-completions stub on a loopback socket that replays gold plans."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("uvicorn", reason="the agent tests need uvicorn (pip install 'agentgym-rl[server]')")

from agentgym.agents.stub import ChatStub, replay_policy, travelplanner_gold_scripts  # noqa: E402
from agentgym.server.live_server import LiveServer  # noqa: E402


@pytest.fixture(scope="module")
def gold_scripts() -> dict[str, list[str]]:
    """First observation -> gold-plan actions, for the first 4 train queries in both formats."""
    scripts = {}
    for action_format in ("react", "json"):
        scripts.update(travelplanner_gold_scripts({"action_format": action_format}, 4))
    return scripts


@pytest.fixture(scope="module")
def stub_server(gold_scripts) -> Iterator[tuple[ChatStub, LiveServer]]:
    stub = ChatStub(replay_policy(gold_scripts))
    with LiveServer(stub.app()) as server:
        yield stub, server


@pytest.fixture
def stub(stub_server) -> Iterator[ChatStub]:
    """The module's stub, with its request log and fault queue emptied for each test."""
    chat_stub, _ = stub_server
    chat_stub.requests.clear()
    chat_stub._faults.clear()
    yield chat_stub
    chat_stub._faults.clear()


@pytest.fixture
def stub_url(stub_server) -> str:
    return stub_server[1].url + "/v1"
