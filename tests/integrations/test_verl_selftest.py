"""`agentgym verl selftest` in CI: real verl AgentLoopWorker, Qwen CT builder, tiny Qwen2 model on CPU.

The in-process model server stands in for vLLM/SGLang, which need a GPU. Slow (about two minutes on
two busy cores): marked ``selftest`` so it can be deselected locally with ``-m 'not selftest'``."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")


@pytest.mark.selftest
def test_selftest_passes_and_reports_its_figures():
    from agentgym.integrations.verl.selftest import run_selftest

    lines: list[str] = []
    figures = run_selftest(echo=lines.append)
    for env_id in ("TravelPlanner-v0", "SearchQA-v0"):
        assert figures[f"{env_id}/max_logprob_gap"] <= 1e-4
        assert figures[f"{env_id}/grad_norm"] > 0.0
        assert figures[f"{env_id}/grpo_max_abs_advantage"] > 0.0
    assert any("OK" in line for line in lines)
