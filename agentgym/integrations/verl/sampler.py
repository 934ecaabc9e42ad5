"""VSPO's value-based sampling as a verl V1 replay buffer (``trainer.v1.sampler.custom_sampler``).

Each training step, once the step's groups have all finished:

1. every group is judged on ``algorithm.vspo.metric`` (mean, std, task value V);
2. when no group is informative (std > 0) it asks the trainer for fresh prompts, at most
   ``max_extra_batches * batch_size`` per step, and judges those too;
3. zero-variance groups are evicted and their slots filled with copies of informative groups
   drawn with probability ∝ V (``vspo.plan_batch``); a copy is written back to the store under
   a new uid ``<uid>~copy<k>``, from which the ``vspo`` estimator reads k for its smoothing.

Metrics per step: ``vspo/evicted_groups``, ``vspo/copies``, ``vspo/extra_prompts``,
``vspo/mean_value``, ``vspo/zero_variance_share``, ``vspo/r_max``. Validation batches are
sampled by the base class, untouched. Only the ``sync`` trainer mode is supported.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

import numpy as np

from agentgym.integrations.verl._guard import require_verl

require_verl()

import transfer_queue as tq  # noqa: E402
from tensordict.tensorclass import NonTensorStack  # noqa: E402
from transfer_queue import KVBatchMeta  # noqa: E402
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer  # noqa: E402

from agentgym.errors import ConfigError  # noqa: E402
from agentgym.integrations.verl.vspo import (  # noqa: E402
    GroupStats,
    VSPOConfig,
    copy_uid,
    effective_r_max,
    group_stats,
    plan_batch,
)

__all__ = ["VSPOReplayBuffer"]


class VSPOReplayBuffer(ReplayBuffer):
    """The sync replay buffer with VSPO's eviction and value-proportional refill."""

    def __init__(self, *args: Any, sampler_kwargs: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, sampler_kwargs=sampler_kwargs, **kwargs)
        if self.trainer_mode != "sync":
            raise ConfigError("trainer.v1.trainer_mode", self.trainer_mode, ["sync"])
        section = sampler_kwargs.get("vspo", None) if sampler_kwargs is not None else None
        self.vspo = VSPOConfig.from_section(section)
        self._rng = np.random.default_rng(self.vspo.seed)
        self._seen_max = -math.inf
        self._rewards: dict[str, list[float]] = {}

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[KVBatchMeta, dict]:
        if partition_id == "val":
            return super().sample(global_steps, partition_id, batch_size)
        budget, requested = int(self.vspo.max_extra_batches * batch_size), 0
        while True:
            self._wait_until_settled(partition_id, batch_size)
            groups = self._judge(partition_id)
            if self.vspo.refill == "none" or any(g.informative for g in groups) or requested >= budget:
                break
            ask = min(batch_size, budget - requested)
            self.refill_fn(ask)
            requested += ask
        plan = plan_batch(groups, batch_size, self.vspo, self._rng)
        snapshot = dict(self.partitions[partition_id])
        self._clear_groups(partition_id, set(plan.drop))
        copy_keys, copy_tags = self._write_copies(partition_id, plan.copies, snapshot)
        batch = self._materialize_batch(partition_id, plan.keep, snapshot)
        for uid in plan.keep + plan.drop:
            self._rewards.pop(uid, None)
        metrics = self._metrics(groups, plan, requested)
        return KVBatchMeta(partition_id=partition_id, keys=[*batch.keys, *copy_keys],
                           tags=[*batch.tags, *copy_tags]), metrics

    # -- steps -------------------------------------------------------------------------------
    def _wait_until_settled(self, partition_id: str, batch_size: int) -> None:
        """Poll until nothing is in flight and at least ``batch_size`` groups are terminal."""
        last_debug = time.time()
        while True:
            self._sync_metadata_from_transfer_queue()
            inflight = self.pending_keys[partition_id] | self.running_keys[partition_id]
            terminal = self.finished_keys[partition_id] | self.failure_keys[partition_id]
            if not inflight and len(terminal) >= batch_size:
                return
            last_debug = self._wait_for_next_poll(partition_id, last_debug)

    def _judge(self, partition_id: str) -> list[GroupStats]:
        """Statistics of every terminal group, oldest first; failed groups count as uninformative."""
        terminal = self.finished_keys[partition_id] | self.failure_keys[partition_id]
        steps = self.prompt_global_steps[partition_id]
        order = sorted(terminal, key=lambda uid: (steps.get(uid, 0), uid))
        self._read_rewards(partition_id, [u for u in order if u not in self._rewards])
        r_max = effective_r_max(self.vspo, self._seen_max)
        failed = self.failure_keys[partition_id]
        return [group_stats(uid, [] if uid in failed else self._rewards.get(uid, []), r_max, self.vspo)
                for uid in order]

    def _read_rewards(self, partition_id: str, uids: list[str]) -> None:
        wanted = set(uids)
        keys = [key for key in self.partitions[partition_id] if key.split("_")[0] in wanted]
        for uid in uids:
            self._rewards[uid] = []
        if not keys:
            return
        use_reward = self.vspo.metric == "reward"
        data = tq.kv_batch_get(keys=keys, partition_id=partition_id,
                               select_fields=["rm_scores"] if use_reward else ["extra_fields"])
        column = data["rm_scores"] if use_reward else data["extra_fields"]
        for key, value in zip(keys, list(column), strict=True):
            number = float(value.sum().item()) if use_reward else _extra_metric(value, self.vspo.metric, key)
            self._rewards[key.split("_")[0]].append(number)
            self._seen_max = max(self._seen_max, number)

    def _write_copies(self, partition_id: str, copies: list[tuple[str, int]],
                      snapshot: dict[str, dict]) -> tuple[list[str], list[dict]]:
        """Store each copy under new keys (same trajectories, uid ``<uid>~copy<k>``)."""
        by_source: dict[str, list[int]] = defaultdict(list)
        for uid, k in copies:
            by_source[uid].append(k)
        all_keys, all_tags = [], []
        for uid, numbers in by_source.items():
            source = sorted(key for key in snapshot if key.split("_")[0] == uid)
            if not source:
                continue
            data = tq.kv_batch_get(keys=source, partition_id=partition_id)
            for k in numbers:
                new_uid = copy_uid(uid, k)
                keys = [f"{new_uid}_{key.split('_', 1)[1]}" for key in source]
                tags = [dict(snapshot[key]) for key in source]
                fields = data.clone()
                fields.set("uid", NonTensorStack(*([new_uid] * len(source))))
                tq.kv_batch_put(keys=keys, partition_id=partition_id, fields=fields, tags=tags)
                all_keys += keys
                all_tags += tags
        return all_keys, all_tags

    def _metrics(self, groups: list[GroupStats], plan: Any, extra_prompts: int) -> dict[str, float]:
        zero = sum(1 for g in groups if not g.informative)
        return {
            "vspo/evicted_groups": float(plan.evicted),
            "vspo/copies": float(len(plan.copies)),
            "vspo/extra_prompts": float(extra_prompts),
            "vspo/mean_value": float(np.mean([g.value for g in groups])) if groups else 0.0,
            "vspo/zero_variance_share": zero / len(groups) if groups else 0.0,
            "vspo/r_max": effective_r_max(self.vspo, self._seen_max) if math.isfinite(self._seen_max) else 0.0,
        }


def _extra_metric(extra_fields: Any, metric: str, key: str) -> float:
    fields = getattr(extra_fields, "data", extra_fields)
    info = fields.get("reward_extra_info", {}) if isinstance(fields, dict) else {}
    if metric not in info:
        raise ConfigError("algorithm.vspo.metric", metric,
                          f"a key of the trajectories' reward_extra_info (trajectory {key} has {sorted(info)})")
    return float(info[metric])
