"""Env server fixtures: apps on loopback sockets (they and the helpers live in server_helpers.py,
which tests/remote/conftest.py shares)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the env server tests need uvicorn (pip install 'agentgym-rl[server]')")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_helpers import live_server, serve  # noqa: E402, F401  (fixtures)
