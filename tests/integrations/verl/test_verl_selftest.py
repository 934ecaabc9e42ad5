"""`agentgym verl selftest` in CI: real verl 0.9.1 on CPU with a tiny Qwen2 model built here.

Part 1: verl's AgentLoopWorker and Qwen CT builder, log-probs, loss mask, advantages, policy loss, one
step. Part 2: real Ray + TransferQueue, verl's TQ worker writing, VSPOReplayBuffer sampling, verl's
PPOTrainerSync._compute_advantage. Part 2b: verl's FullyAsyncLLMServerClient over an aborting stand-in
server, and VSPOReplayBufferAsync on the real TransferQueue. Part 3: `agentgym train prs_vspo|planner_r1` through verl's
main_ppo up to GPU allocation. The in-process model server stands in for vLLM/SGLang, which need a
GPU. Slow (two to ten minutes on two cores, by load): marked ``selftest``, deselect with ``-m 'not selftest'``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.selftest
def test_selftest_passes_all_three_parts_and_reports_its_figures(tmp_path, monkeypatch):
    pytest.importorskip("verl")
    pytest.importorskip("transfer_queue")
    import ray

    from agentgym.integrations.verl.preflight.selftest import run_selftest

    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    figures = run_selftest(echo=lines.append)
    assert list(tmp_path.iterdir()) == []  # nothing written where it was run (Hydra's outputs/ included)
    for env_id in ("TravelPlanner-v0", "SearchQA-v0"):
        assert figures[f"{env_id}/max_logprob_gap"] <= 1e-4
        assert figures[f"{env_id}/grad_norm"] > 0.0
        assert figures[f"{env_id}/grpo_max_abs_advantage"] > 0.0
    assert figures["tq/evicted"] == 2 and figures["tq/copies"] == 2 and figures["tq/trajectories"] == 6
    assert figures["tq/copy_advantage_gap"] <= 1e-6 and figures["tq/old_logprob_gap"] <= 1e-4
    assert figures["async/aborts"] == 8 and figures["async/ran_past"] >= 4
    assert figures["async/zero_variance_evicted"] == 2 and figures["async/copies"] == 2
    assert figures["async/stale_evicted"] == 3 and figures["async/refilled"] == 2 + 3
    # verl's own run length from the 4 prepared rows, batch 2: 2 steps per epoch x the recipes' epochs
    assert figures["launch/prs_vspo/total_training_steps"] == 2 * 5
    assert figures["launch/planner_r1/total_training_steps"] == 2 * 30
    assert "launch path OK up to GPU allocation" in lines
    assert lines[-1].startswith("selftest OK in ")
    assert not ray.is_initialized()  # part 2 shut its Ray down


_BLOCKED = textwrap.dedent("""
    import importlib.abc, sys

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("verl", "transfer_queue"):
                raise ImportError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    sys.argv = ["agentgym", "verl", "selftest"]
    from agentgym.cli import main
    main()
""")


def test_without_the_verl_extra_the_selftest_names_it():
    result = subprocess.run([sys.executable, "-c", _BLOCKED], capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr[-2000:]  # every command's exit status for a missing extra
    assert "pip install 'agentgym-rl[verl]'" in result.stderr and "verl 0.9.1" in result.stderr
    assert "Traceback" not in result.stderr
