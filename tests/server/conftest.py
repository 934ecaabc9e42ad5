"""Env server fixtures: apps on loopback sockets (helpers live in server_helpers.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="the env server tests need uvicorn (pip install 'agentgym-rl[server]')")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_helpers import settings  # noqa: E402

from agentgym.server import create_app  # noqa: E402
from agentgym.server.live_server import LiveServer  # noqa: E402


@pytest.fixture(scope="module")
def live_server() -> Iterator[LiveServer]:
    """One env server on a loopback socket for the module (two tokens, the default limits)."""
    with LiveServer(create_app(settings())) as server:
        yield server


@pytest.fixture
def serve() -> Iterator[Callable[..., LiveServer]]:
    """``serve(**settings)`` starts a server just for the test; all are stopped at its end."""
    started: list[LiveServer] = []

    def start(**fields: Any) -> LiveServer:
        server = LiveServer(create_app(settings(**fields))).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
