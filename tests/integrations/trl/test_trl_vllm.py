"""TRL's ``GRPOTrainer(use_vllm=True)`` over agentgym's rollout: the sampling log-probs reach TRL's
importance-sampling correction (on by default with vLLM), which crashed on ``logprobs=None``.

vLLM needs a GPU: ``vllm_standin.VLLMStandIn`` takes ``VLLMGeneration``'s place (same constructor
and ``generate``; log-probs, stop strings as vLLM ends them), everything else is TRL's own code."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("trl")

from vllm_standin import VLLMStandIn  # noqa: E402

from agentgym.integrations.trl.train import build_run, load_recipe  # noqa: E402

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def _train(monkeypatch, tmp_path, shift=0.0):
    import torch
    from trl.trainer import grpo_trainer

    torch.manual_seed(0)
    monkeypatch.setattr(grpo_trainer, "VLLMGeneration", VLLMStandIn)
    monkeypatch.setattr(VLLMStandIn, "shift", shift)
    recipe = load_recipe("trl_searchqa", ["tasks.count=2", "rollout.constraint=null", "rollout.response_length=48"])
    trainer, rollout = build_run(recipe, grpo={
        "output_dir": str(tmp_path), "use_vllm": True, "vllm_mode": "colocate", "max_steps": 1,
        "per_device_train_batch_size": 8, "num_generations": 4, "max_completion_length": 48, "logging_steps": 1,
        "disable_tqdm": True})
    trainer.train()
    return trainer, rollout


def test_a_training_step_runs_and_the_is_ratio_comes_from_the_rollouts_logprobs(monkeypatch, tmp_path):
    trainer, rollout = _train(monkeypatch, tmp_path)
    standin = trainer.vllm_generation
    assert isinstance(standin, VLLMStandIn) and standin.calls >= 1 and standin.synced >= 1
    logs = trainer.state.log_history[0]
    # the same weights sampled and scored: agentgym's log-probs are the policy's, the ratio is 1
    assert logs["sampling/sampling_logp_difference/mean"] < 1e-3
    assert logs["sampling/importance_sampling_ratio/mean"] == pytest.approx(1.0, abs=1e-2)
    assert rollout.history and rollout.history[0]["step"] == 0


def test_control_log_probs_that_are_off_move_the_ratio(monkeypatch, tmp_path):
    """The ratio reads what the rollout returns: log-probs reported 1 nat too low show as a difference of 1."""
    trainer, _ = _train(monkeypatch, tmp_path, shift=-1.0)
    logs = trainer.state.log_history[0]
    assert logs["sampling/sampling_logp_difference/mean"] == pytest.approx(1.0, abs=1e-3)


def test_stop_strings_end_vllm_turns_without_an_end_of_turn_token(monkeypatch, tmp_path):
    from agentgym.integrations.trl._sampler import TurnSampler

    trainer, _ = _train(monkeypatch, tmp_path)
    sampler = TurnSampler(trainer, [trainer.processing_class.eos_token_id])
    standin = trainer.vllm_generation
    standin.finished.clear()
    import asyncio

    sampler.live = 1
    prompt = trainer.processing_class("<|user|> hi <|end|><|assistant|>", add_special_tokens=False)["input_ids"]
    tokens, logprobs = asyncio.run(sampler.sample(prompt, 40, ("</search>", "</answer>")))
    assert len(tokens) == len(logprobs) and all(lp <= 0.0 for lp in logprobs)
    reason, what = standin.finished[-1]
    if what in ("</search>", "</answer>"):
        assert sampler.decode(tokens).endswith(what) and tokens[-1] != trainer.processing_class.eos_token_id
    assert standin.generation_kwargs.get("stop") is None  # the rollout's stop strings were for that call only
