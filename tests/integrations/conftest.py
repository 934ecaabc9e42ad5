"""Shared fixtures and helpers of the integration tests (engine/, trl/, verl/ and the single-module bridges).

The helper modules (verl_harness, scripted_episodes, failing_infra, vllm_standin, ...) live in this folder;
it goes on sys.path so that tests in every subfolder import them by name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _fresh_fatal_memory():
    """Each test starts as a fresh worker: no configuration error seen yet."""
    yield
    try:
        from agentgym.integrations.verl import agent_loop
    except Exception:  # verl not installed: nothing to reset
        return
    agent_loop._FATAL.clear()
