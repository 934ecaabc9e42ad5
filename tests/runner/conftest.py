"""`agentgym run` fixtures: a chat-completions stub on loopback that replays gold plans."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the run tests need uvicorn (pip install 'agentgym-rl[server]')")

from agentgym.agents.stub import ChatStub, replay_policy, travelplanner_gold_scripts  # noqa: E402
from agentgym.server.live_server import LiveServer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_helpers import EPISODES  # noqa: E402


@pytest.fixture(scope="module")
def model_server() -> Iterator[tuple[ChatStub, str]]:
    """``(stub, base_url)``: gold plans for the first EPISODES train queries, both formats."""
    scripts = {}
    for action_format in ("react", "json"):
        scripts.update(travelplanner_gold_scripts({"action_format": action_format}, EPISODES))
    stub = ChatStub(replay_policy(scripts))
    with LiveServer(stub.app()) as server:
        yield stub, server.url + "/v1"


@pytest.fixture
def model(model_server) -> Iterator[tuple[ChatStub, str]]:
    stub, url = model_server
    stub.requests.clear()
    stub._faults.clear()
    yield stub, url
    stub._faults.clear()
