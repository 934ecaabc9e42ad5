"""Search-QA fixtures: the real data folder, and uvicorn servers on loopback for HTTP tests."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SEARCHQA_DATA = Path(os.environ.get("AGENTGYM_SHARED_DATA", REPO.parent / "shared" / "data")) / "searchqa"
_ENV_VARS = ("AGENTGYM_SEARCHQA_TASKS", "AGENTGYM_SEARCHQA_QUESTIONS", "AGENTGYM_SEARCHQA_CORPUS", "AGENTGYM_SEARCHQA_RETRIEVER",
             "AGENTGYM_RETRIEVER_TOKEN")


@pytest.fixture(scope="session", autouse=True)
def _no_searchqa_env_vars() -> None:
    # The tests choose their data explicitly; a developer's settings must not leak in.
    for name in _ENV_VARS:
        os.environ.pop(name, None)


@pytest.fixture(scope="session")
def searchqa_data() -> Path:
    """The real search-QA samples; tests using them skip when they are absent."""
    if not (SEARCHQA_DATA / "hotpotqa_dev500.corpus.jsonl").is_file():
        pytest.skip(f"real search-QA data not found at {SEARCHQA_DATA}; "
                    "set AGENTGYM_SHARED_DATA to the folder holding searchqa/")
    return SEARCHQA_DATA


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackServer:
    """An ASGI app served by uvicorn in a thread on 127.0.0.1 and a free port; stops on exit."""

    def __init__(self, app) -> None:
        import uvicorn

        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def loopback_server():
    """``with loopback_server(app) as server:`` serves ``app`` at ``server.url`` for the block."""
    pytest.importorskip("uvicorn", reason="the server tests need uvicorn (pip install 'agentgym-rl[server]')")
    return LoopbackServer
