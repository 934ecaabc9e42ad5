"""``agentgym serve`` as users run it: a subprocess on a loopback port, and its option checks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from server_helpers import TOKEN
from typer.testing import CliRunner

from agentgym._connection import ConnectionLost, Endpoint, SyncConnection
from agentgym.cli import app
from agentgym.errors import RemoteTimeout
from agentgym.remote import RemoteEnv

HERE = Path(__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served():
    port = _free_port()
    env = {**os.environ, "AGENTGYM_SERVER_TOKENS": TOKEN,
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", "from agentgym.cli import main; main()", "serve", "--port",
                             str(port), "--import", "sleepy_env", "--env", "AgentGymTest/Sleepy-v0", "--env",
                             "TravelPlanner-v0", "--request-timeout", "0.5"], env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            SyncConnection(Endpoint.parse(url), timeout=5).request("GET", "/health", None, {})
            break
        except ConnectionLost:
            assert proc.poll() is None, "agentgym serve exited"
            time.sleep(0.05)
    yield url, proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_agentgym_serve_serves_envs_and_interrupts_a_stuck_step(served):
    url, proc = served
    stuck = RemoteEnv(url, "AgentGymTest/Sleepy-v0", token=TOKEN)
    healthy = RemoteEnv(url, "AgentGymTest/Sleepy-v0", token=TOKEN)
    stuck.reset()
    healthy.reset()
    with pytest.raises(RemoteTimeout):
        stuck.step("spin 60")  # a busy loop in the event loop's thread, stopped by the deadline
    assert healthy.step("hello")[0] == "did hello"
    planner = RemoteEnv(url, "TravelPlanner-v0", token=TOKEN)
    assert planner.reset(seed=0)[1]["turn"] == 0
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after a clean shutdown


def test_serve_refuses_an_open_interface_without_a_token(monkeypatch):
    monkeypatch.delenv("AGENTGYM_SERVER_TOKENS", raising=False)
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2 and "token" in result.output


def test_serve_help_lists_the_limits():
    result = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for option in ("--token", "--max-sessions", "--session-ttl", "--max-request-bytes", "--request-timeout",
                   "--env-calls"):
        assert option in result.output
