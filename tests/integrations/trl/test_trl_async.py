"""agentgym episodes in TRL's ``AsyncGRPOTrainer``: ``AgentGymRolloutWorker`` (TRL's own async rollout
worker and loop, playing agentgym envs by the shared turn engine) against a stand-in vLLM server on
127.0.0.1 (``vllm_server_standin``: vLLM needs a GPU), and one real training step of TRL's trainer.

TRL's trainer packs samples for a FlashAttention-3 kernel it downloads (``kernels``); no GPU here, so
``_cpu_varlen_attention`` stands in for that kernel (the same varlen causal attention, in torch)."""

from __future__ import annotations

import os
import queue
import threading
import time
import types

import numpy as np
import pytest

pytest.importorskip("trl")
pytest.importorskip("aiohttp")

from vllm_server_standin import VLLMServerStandIn  # noqa: E402

from agentgym.integrations.trl.rollout import task_dataset  # noqa: E402
from agentgym.integrations.trl.train import load_model, load_recipe, load_tokenizer  # noqa: E402

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

ENV_KWARGS = {"synthetic_size": "small", "max_turns": 3, "top_k": 1, "passage_chars": 100}
REWARD = load_recipe("trl_searchqa").reward


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The trl_searchqa recipe's tiny policy: its tokenizer, and the model saved to a folder (what the
    trainer and the server load)."""
    recipe = load_recipe("trl_searchqa", ["tasks.count=4"])
    tokenizer = load_tokenizer(recipe)
    model = load_model(recipe, tokenizer)
    folder = tmp_path_factory.mktemp("tiny-policy")
    model.save_pretrained(folder)
    return tokenizer, str(folder)


@pytest.fixture(scope="module")
def server(tiny):
    standin = VLLMServerStandIn(tiny[1], tiny[0])
    yield standin
    standin.close()


def _args(tmp_path, url, **fields):
    from trl.experimental.async_grpo.async_grpo_config import AsyncGRPOConfig

    return AsyncGRPOConfig(output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=8, num_generations=4,
                           max_steps=1, max_completion_length=64, report_to=[], dtype="float32", logging_steps=1,
                           vllm_server_base_url=url, vllm_server_timeout=30, **fields)


def _dataset():
    return task_dataset("SearchQA-v0", options=[{"task_index": i} for i in range(2)], env_kwargs=ENV_KWARGS)


def _play_in_process(tiny, server, tmp_path, groups=2):
    """TRL's loop object run in this process (the worker runs the same object in its child)."""
    from agentgym.integrations.trl.async_worker import AgentGymRolloutWorker

    tokenizer = tiny[0]
    args = _args(tmp_path, server.url)
    rollout_buffer = queue.Queue()
    loop = AgentGymRolloutWorker._loop_cls(
        env_id="SearchQA-v0", agentgym={"env_kwargs": ENV_KWARGS, "reward": REWARD, "max_turns": 3,
                                        "response_length": 64},
        total_steps=1, model_name="standin", dataset=_dataset(), reward_funcs=[], processing_class=tokenizer,
        eos_token_ids=[tokenizer.eos_token_id], num_generations=args.num_generations, max_inflight_tasks=8,
        vllm_server_url=server.url, max_tokens=64, temperature=1.0, rollout_buffer=rollout_buffer,
        model_version_value=types.SimpleNamespace(value=0), heartbeat_value=types.SimpleNamespace(value=0.0),
        failed_event=threading.Event(), exception_info_queue=queue.Queue(), metrics_queue=queue.Queue())
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    samples, deadline = [], time.time() + 120
    while len({s.group_id for s in samples}) < groups and time.time() < deadline:
        try:
            samples.append(rollout_buffer.get(timeout=1))
        except queue.Empty:
            pass
    time.sleep(0.5)  # a scored group's rows are queued together: take the rest of the last one
    while not rollout_buffer.empty():
        samples.append(rollout_buffer.get())
    loop._loop.call_soon_threadsafe(loop._stop_event.set)
    thread.join(timeout=30)
    return loop, samples, tokenizer


def test_the_worker_plays_agentgym_episodes_by_the_shared_turn_engine(tiny, server, tmp_path):
    loop, samples, tokenizer = _play_in_process(tiny, server, tmp_path)
    assert samples
    asked = server.requests[0]
    assert asked["stop"] == ["</search>", "</answer>"] and asked["include_stop_str_in_output"] is True
    served: dict[tuple, list] = {}
    for prompt, output in server.served:  # the group's first turns share a prompt
        served.setdefault(prompt, []).append(output)
    for sample in samples:
        ids, mask, old = sample.input_ids.tolist(), sample.completion_mask.tolist(), sample.old_log_probs.tolist()
        assert len(ids) == len(mask) == len(old) and mask[-1] == 1  # ends on a sampled token
        assert all(lp == 0.0 for lp, m in zip(old, mask) if m == 0)
        # the loss mask is 1 exactly on what the server sampled: each run of 1s is (a cut of) the completion
        # served for the prompt before it, and everything else (observations, added tokens) is 0
        for start, end in _runs(mask):
            assert _served_through(ids, start, end, served), (start, end)
    by_group: dict[int, list] = {}
    for sample in samples:
        by_group.setdefault(sample.group_id, []).append(sample)
    for group in by_group.values():
        prompt_len = min(int(np.argmax(s.completion_mask)) for s in group)
        assert len({tuple(s.input_ids[:prompt_len].tolist()) for s in group}) == 1  # one task, one reset
        rewards = np.array([s.metrics["reward"] for s in group])
        expected = (rewards - rewards.mean()) / (rewards.std() + 1e-8)  # TRL's own normalisation
        assert [s.advantage for s in group] == pytest.approx(expected.tolist(), abs=1e-5)


def test_the_sampled_log_probs_are_vllms(tiny, server, tmp_path):
    server.requests.clear()
    loop, samples, _ = _play_in_process(tiny, server, tmp_path, groups=1)
    import torch

    sample = samples[0]
    ids, mask = sample.input_ids.tolist(), sample.completion_mask.tolist()
    with torch.no_grad():
        logits = server.model(torch.tensor([ids])).logits[0].float()
    expected = [float(torch.log_softmax(logits[i - 1], -1)[ids[i]]) for i in range(len(ids)) if mask[i]]
    got = [lp for lp, m in zip(sample.old_log_probs.tolist(), mask) if m]
    assert got == pytest.approx(expected, abs=1e-4)


def _served_through(ids, start, end, served):
    """Whether ids[start:end] is what the server returned for the prompt before it: one completion,
    cut after the action, or several when sampling resumed after a stop string inside <think>."""
    while start < end:
        outputs = served.get(tuple(ids[:start]), [])
        full = [o for o in outputs if o and tuple(ids[start:start + len(o)]) == o and start + len(o) < end]
        if full:  # a chunk the turn went on after
            start += len(full[0])
            continue
        return any(tuple(ids[start:end]) == o[:end - start] for o in outputs)
    return True


def _runs(mask):
    """(start, end) of each maximal run of 1s."""
    runs, start = [], None
    for i, m in enumerate([*mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _cpu_varlen_attention(q, k, v, cu_q, cu_k, max_q, max_k, softmax_scale=None, causal=True, window_size=(-1, -1),
                          **_):
    """FlashAttention's ``flash_attn_varlen_func`` in torch: per packed segment, causal attention aligned to
    the end of the keys (as FA does when a segment has fewer queries than keys)."""
    import torch

    out = torch.zeros_like(q)
    for i in range(len(cu_q) - 1):
        qs, qe, ks, ke = int(cu_q[i]), int(cu_q[i + 1]), int(cu_k[i]), int(cu_k[i + 1])
        qi, ki, vi = (x.transpose(0, 1) for x in (q[qs:qe], k[ks:ke], v[ks:ke]))
        if ki.shape[0] != qi.shape[0]:  # grouped-query attention: repeat the key/value heads
            ki, vi = (x.repeat_interleave(qi.shape[0] // x.shape[0], 0) for x in (ki, vi))
        mask = torch.ones(qi.shape[1], ki.shape[1], dtype=torch.bool).tril(diagonal=ki.shape[1] - qi.shape[1])
        out[qs:qe] = torch.nn.functional.scaled_dot_product_attention(
            qi[None], ki[None], vi[None], attn_mask=mask, scale=softmax_scale)[0].transpose(0, 1)
    return out


class _NoWeightSync:
    """The stand-in server reads the weights from disk: nothing to stream (TRL's no-op weight transfer)."""

    def init_weight_transfer(self):
        pass

    def pause(self):
        pass

    def send_weights(self, iterator):
        for _ in iterator:
            pass

    def resume(self):
        pass

    def destroy(self):
        pass


def _gold_or_not(tokenizer):
    """A scripted policy with a known reward: alternately the task's gold answer and a wrong one."""
    import gymnasium

    env = gymnasium.make("SearchQA-v0", **ENV_KWARGS)
    golds = {}
    for i in range(2):
        env.reset(options={"task_index": i})
        question = tuple(tokenizer.encode(" " + env.unwrapped.task.text, add_special_tokens=False))
        golds[question] = env.unwrapped.task.golden_answers[0]
    calls = iter(range(10 ** 6))

    def script(prompt_ids):
        prompt = tuple(prompt_ids)
        gold = next(g for q, g in golds.items() if any(prompt[i:i + len(q)] == q for i in range(len(prompt))))
        return f"<answer> {gold if next(calls) % 2 else 'Skei'} </answer>"  # Skei: a word the tokenizer has

    return script


def test_async_grpo_trainer_trains_a_step_from_the_agentgym_worker(tiny, tmp_path, monkeypatch):
    from trl.experimental.async_grpo import async_grpo_trainer, async_rollout_worker, packing

    from agentgym.integrations.trl.async_worker import AgentGymRolloutWorker

    monkeypatch.setattr(async_rollout_worker, "is_vllm_available", lambda: True)  # the server is the stand-in
    monkeypatch.setattr(async_grpo_trainer, "get_peak_flops_per_device", lambda *a, **k: 1.0)  # a CUDA query
    monkeypatch.setattr(packing, "_flash_attn", lambda: types.SimpleNamespace(flash_attn_varlen_func=_cpu_varlen_attention))
    tokenizer, model_dir = tiny
    server = VLLMServerStandIn(model_dir, tokenizer, script=_gold_or_not(tokenizer))
    args = _args(tmp_path, server.url)
    dataset = _dataset()
    worker = AgentGymRolloutWorker.for_trainer(args, "SearchQA-v0", model_name="standin", processing_class=tokenizer,
                                               dataset=dataset, env_kwargs=ENV_KWARGS, reward=REWARD, max_turns=3,
                                               response_length=64)
    trainer = async_grpo_trainer.AsyncGRPOTrainer(model=model_dir, args=args, train_dataset=dataset,
                                                  processing_class=tokenizer, rollout_worker=worker,
                                                  weight_transfer=_NoWeightSync())
    try:
        trainer.train()
    finally:
        server.close()
    assert trainer.state.global_step == 1
    log = trainer.state.log_history[0]
    assert np.isfinite(log["loss"]) and log["grad_norm"] > 0, log  # rewards 1.5 and 0.5 in each group: advantages
    assert log["rewards/agentgym_reward"] == pytest.approx(1.0, abs=0.26), log  # gold 1.5, wrong 0.5
