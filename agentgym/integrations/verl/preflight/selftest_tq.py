"""``agentgym verl selftest``, part 2: the real TransferQueue on a local Ray, and VSPO over it.

Ray starts locally (2 CPUs) with the real TransferQueue sized for that (one storage unit). verl's
own ``AgentLoopWorkerTQ`` (its class, run in this process) plays the ``agentgym`` loop over
SearchQA-v0 rows with the tiny model and writes every trajectory to the store through verl's own
post-processing. Three groups: one whose rewards vary (one session teacher-forced to the gold
answer), one all wrong, one all right. The replay buffer is built by verl's
``PPOTrainer._build_replay_buffer`` from the ``prs_vspo`` recipe (``VSPOReplayBuffer``) and
samples one step; advantages come from the real ``PPOTrainerSync._compute_advantage`` (the ``vspo``
estimator), read back from the store. Checked: zero-variance groups are evicted, copies carry new
uids, each copy's advantages are its source's times ``1 / (1 + rate * k)``, the batch keeps its size.
Ray is always shut down.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
import uuid
from pathlib import Path
from typing import Any

__all__ = ["run_transfer_queue_check"]

_SESSION: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar("agentgym_selftest_session",
                                                                                  default=None)


def _config(model_dir: Path, n: int, groups: int) -> Any:
    from agentgym.integrations.verl.train import compose_recipe

    return compose_recipe("prs_vspo", [
        f"actor_rollout_ref.model.path={model_dir}", "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.n={n}", "actor_rollout_ref.rollout.calculate_log_probs=true",
        "actor_rollout_ref.model.use_remove_padding=false", f"data.train_batch_size={groups}",
        "data.max_prompt_length=4096", "data.max_response_length=1024", "agentgym.max_turns=2",
        "agentgym.max_observation_chars=1000", "trainer.n_gpus_per_node=1",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1", "actor_rollout_ref.actor.use_kl_loss=false"])


def _batch(rows: list[dict[str, Any]], uids: list[str]) -> Any:
    import numpy as np
    from verl.utils import tensordict_utils as tu

    columns = {key: np.array([row[key] for row in rows], dtype=object)
               for key in ("prompt", "extra_info", "data_source", "reward_model", "agent_name")}
    columns["raw_prompt"] = columns.pop("prompt")
    columns["index"] = np.array([row["extra_info"]["index"] for row in rows], dtype=object)
    columns["uid"] = np.array(uids, dtype=object)
    batch = tu.get_tensordict(columns)
    tu.assign_non_tensor_data(batch, "global_steps", 1)
    return batch


async def _generate(worker: Any, batch: Any) -> None:
    await worker.generate_sequences(batch)
    while worker.background_tasks:  # verl fires and forgets; the statuses land in the store at the end
        await asyncio.gather(*list(worker.background_tasks), return_exceptions=True)


def _play(config: Any, server: Any, rows: list[dict[str, Any]], uids: list[str],
          forced: dict[tuple[str, int], list[str]]) -> None:
    """verl's TQ worker plays every row; sessions in ``forced`` are teacher-forced to their actions."""
    import transfer_queue as tq
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    from agentgym.integrations.verl import agent_loop as loop_module

    worker = AgentLoopWorkerTQ.__ray_actor_class__(config, llm_client=server)  # the class, in this process
    run, init = loop_module.AgentGymAgentLoop.run, loop_module._Rollout.__init__

    async def tagged_run(self: Any, sampling_params: Any, **kwargs: Any) -> Any:
        _SESSION.set((str(kwargs.get("uid")), int(kwargs.get("session_id", 0))))
        return await run(self, sampling_params, **kwargs)

    def tagged_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        actions = forced.get(_SESSION.get() or ("", -1))
        if actions:
            server.force(self.request_id, actions)

    tags = [{"is_prompt": True, "status": "pending", "global_steps": 1} for _ in uids]
    tq.kv_batch_put(keys=uids, partition_id="train", tags=tags)  # as PPOTrainer._submit_batch_to_rollout does
    loop_module.AgentGymAgentLoop.run, loop_module._Rollout.__init__ = tagged_run, tagged_init
    try:
        asyncio.run(_generate(worker, _batch(rows, uids)))
    finally:
        loop_module.AgentGymAgentLoop.run, loop_module._Rollout.__init__ = run, init


def _group_rewards(uids: list[str]) -> dict[str, list[float]]:
    import transfer_queue as tq

    listed = tq.kv_list(partition_id="train")["train"]
    statuses = {uid: listed[uid]["status"] for uid in uids}
    if any(status != "finished" for status in statuses.values()):
        raise AssertionError(f"verl's agent-loop worker did not finish every group: {statuses}")
    keys = sorted(k for k in listed if not listed[k].get("is_prompt"))
    data = tq.kv_batch_get(keys=keys, partition_id="train", select_fields=["rm_scores"])
    rewards: dict[str, list[float]] = {uid: [] for uid in uids}
    for key, scores in zip(keys, list(data["rm_scores"]), strict=True):
        rewards[key.split("_")[0]].append(float(scores.sum()))
    return rewards


def _old_log_probs(model: Any, keys: list[str]) -> float:
    """What the actor computes before the advantage step: each trajectory's log-probs under the
    current weights (``old_log_probs``), written back to the store; returns the largest gap to the
    rollout's own log-probs on trained tokens."""
    import torch
    import transfer_queue as tq
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    data = tq.kv_batch_get(keys=keys, partition_id="train",
                           select_fields=["input_ids", "responses", "response_mask", "rollout_log_probs"])
    rows, gap = [], 0.0
    for ids, response, mask, rollout in zip(list(data["input_ids"]), list(data["responses"]),
                                            list(data["response_mask"]), list(data["rollout_log_probs"]), strict=True):
        with torch.no_grad():
            logits = model(input_ids=ids.unsqueeze(0)).logits[0, -len(response) - 1: -1].float()
        old = torch.log_softmax(logits, dim=-1).gather(-1, response.unsqueeze(-1)).squeeze(-1)
        trained = mask.bool()
        if trained.any():
            gap = max(gap, float((old - rollout)[trained].abs().max()))
        rows.append({"old_log_probs": old})
    tq.kv_batch_put(keys=keys, partition_id="train", fields=list_of_dict_to_tensordict(rows))
    return gap


def _sample_and_advantage(config: Any, model: Any, batch_size: int) -> tuple[Any, dict[str, Any], dict[str, float]]:
    import transfer_queue as tq
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    trainer = object.__new__(PPOTrainerSync)  # only what the two methods read: no workers, no GPU
    trainer.config, trainer.trainer_mode = config, "sync"
    trainer._add_prompts_to_generate = lambda n: n  # the selftest's groups are all there is
    buffer = trainer._build_replay_buffer()
    buffer.poll_interval = 0.05
    batch, metrics = buffer.sample(global_steps=1, partition_id="train", batch_size=batch_size)
    metrics["old_logprob_gap"] = _old_log_probs(model, list(batch.keys))
    trainer._compute_advantage(batch, metrics)
    data = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["uid", "advantages"])
    advantages = {key: [float(a) for a in adv.tolist()] for key, adv in zip(batch.keys, list(data["advantages"]),
                                                                            strict=True)}
    stored_uids = dict(zip(batch.keys, list(data["uid"]), strict=True))
    return batch, {"advantages": advantages, "uids": stored_uids}, metrics


def _check(batch: Any, read: dict[str, Any], rewards: dict[str, list[float]], n: int, batch_size: int,
           rate: float) -> dict[str, float]:
    import transfer_queue as tq

    from agentgym.integrations.verl.vspo import copy_index, smoothing_factor

    varied = {uid for uid, values in rewards.items() if len(set(values)) > 1}
    idle = set(rewards) - varied
    groups = {key.split("_")[0] for key in batch.keys}
    if not varied or not idle:
        raise AssertionError(f"the groups did not come out as planned (rewards {rewards})")
    if groups & idle or tq.kv_list(partition_id="train")["train"].keys() & idle:
        raise AssertionError(f"zero-variance groups were not evicted from the batch and the store: {sorted(idle)}")
    if len(groups) != batch_size or len(batch.keys) != n * batch_size:
        raise AssertionError(f"the batch has {len(groups)} groups / {len(batch.keys)} trajectories, "
                             f"expected {batch_size} / {n * batch_size}")
    copies = [key for key in batch.keys if copy_index(key.split("_")[0]) > 0]
    if len(copies) != n * len(idle):
        raise AssertionError(f"{len(copies)} copied trajectories, expected {n * len(idle)}")
    gap = 0.0
    for key in copies:
        uid, rest = key.split("_", 1)
        if read["uids"][key] != uid:
            raise AssertionError(f"copy {key} is stored under uid {read['uids'][key]!r}, not its own")
        source = read["advantages"][f"{uid.split('~')[0]}_{rest}"]
        factor = smoothing_factor(copy_index(uid), rate)
        gap = max(gap, max(abs(c - s * factor) for c, s in zip(read["advantages"][key], source, strict=True)))
    if not gap <= 1e-6:
        raise AssertionError(f"copies' advantages are off their source's x 1/(1+rate*k) by {gap:.2e}")
    if not any(abs(a) > 0 for values in read["advantages"].values() for a in values):
        raise AssertionError("every advantage in the sampled batch is zero")
    return {"groups": float(len(rewards)), "evicted": float(len(idle)), "copies": float(len(copies) // n),
            "copy_advantage_gap": gap, "trajectories": float(len(batch.keys))}


def run_transfer_queue_check(model_dir: Path, model: Any, server: Any, *, n: int = 2,
                             echo: Any = print) -> dict[str, float]:
    """Part 2 of the selftest, ``server`` serving ``model`` (saved in ``model_dir``) with verl's
    ``generate`` signature and a ``force(request_id, actions)`` hook; Ray is always shut down here."""
    import ray
    import transfer_queue as tq
    from omegaconf import OmegaConf

    from agentgym.integrations.verl.preflight.dryrun import gold_answer
    from agentgym.integrations.verl.prepare import prepare_rows

    started = time.perf_counter()
    rows = prepare_rows("SearchQA-v0", split="train", limit=3)
    gold = [f"<answer>{gold_answer(row)}</answer>" for row in rows]
    uids = [f"selftest{uuid.uuid4().hex[:8]}" for _ in rows]
    forced = {(uids[0], 0): [gold[0]], **{(uids[2], s): [gold[2]] for s in range(n)}}  # varied, wrong, right
    config = _config(model_dir, n, len(rows))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
        boot = time.perf_counter() - started
        _play(config, server, rows, uids, forced)
        rewards = _group_rewards(uids)
        batch, read, metrics = _sample_and_advantage(config, model, len(rows))
        rate = float(config.algorithm.vspo.smoothing_rate)
        figures = _check(batch, read, rewards, n, len(rows), rate)
        if not metrics["old_logprob_gap"] <= 1e-4:
            raise AssertionError(f"old log-probs differ from the rollout's by {metrics['old_logprob_gap']:.2e}")
    finally:
        try:
            tq.close()
        finally:
            ray.shutdown()
    figures.update({"ray_tq_start_seconds": boot, "seconds": time.perf_counter() - started,
                    "vspo_evicted_metric": float(metrics.get("vspo/evicted_groups", math.nan)),
                    "old_logprob_gap": float(metrics["old_logprob_gap"])})
    echo(f"TransferQueue/VSPO: Ray (2 CPUs) + TransferQueue (1 storage unit) up in {boot:.1f}s; verl's "
         f"AgentLoopWorkerTQ wrote {int(figures['groups'])} groups x {n}; VSPOReplayBuffer evicted "
         f"{int(figures['evicted'])} zero-variance groups, {int(figures['copies'])} copies under new uids, "
         f"batch {int(figures['trajectories'])} trajectories as configured; PPOTrainerSync._compute_advantage: "
         f"copies = source x 1/(1 + {rate:g}k) (gap {figures['copy_advantage_gap']:.1e}; old log-probs "
         f"recomputed, gap {figures['old_logprob_gap']:.1e}); Ray shut down")
    return figures
