"""Client tests (agentgym.remote) against real env servers on loopback: the server tests' helpers and
fixtures, from tests/server/server_helpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the client tests need uvicorn (pip install 'agentgym-rl[server]')")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from server_helpers import live_server, serve  # noqa: E402, F401  (fixtures)
