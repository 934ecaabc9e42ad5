"""Shared fixtures of the verl integration tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fresh_fatal_memory():
    """Each test starts as a fresh worker: no configuration error seen yet."""
    yield
    try:
        from agentgym.integrations.verl import agent_loop
    except Exception:  # verl not installed: nothing to reset
        return
    agent_loop._FATAL.clear()
