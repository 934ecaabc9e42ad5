"""agentgym's V1 replay buffers (``trainer.v1.sampler.custom_sampler``).

``AgentGymReplayBuffer`` is verl's sync buffer plus a run-level audit of every training batch:

* trajectories left out of training (something outside the model failed, every reward term
  abstained) leave the batch, so verl's estimator, whichever it is, computes every group's
  baseline over the rest: a failure never enters a baseline as a zero (``audit_batch``);
* a trajectory carrying a configuration error (``agentgym.fatal``: a ``ConfigError``, a missing
  reward dependency) aborts the run with ``TrainingAborted`` and the original message;
* the failure budget (``rollouts.FailureBudget``): when more than ``agentgym.max_failed_share``
  (default 0.5) of the last ``agentgym.failure_window`` trajectories were left out, or are missing
  because verl failed their group, the run aborts with the reasons, their counts and the first error;
* the reward lab's figures of the step's groups, ``agentgym/reward/...`` (``rewards.lab.group_metrics``:
  the zero-variance share, within-group std, rank correlation with the outcome, abstention and
  failure shares per term), the names TRL's rollout logs too;
* per-step metrics ``agentgym/failed/<reason>`` (shares of the step), ``agentgym/failed_share``
  (over the window), ``agentgym/trajectories``, ``agentgym/masked``, ``agentgym/masked_share``,
  ``agentgym/env_failed``, ``agentgym/abstained``, ``agentgym/unfinished``, ``agentgym/failed_groups``,
  and how far behind the trajectories are, ``agentgym/schedule_lag/{mean,max}`` and
  ``agentgym/staleness/{mean,max}`` (``_staleness``).

``AgentGymReplayBufferAsync`` is the same audit over verl's ``ReplayBufferAsync`` (stale and failed
groups evicted, exactly k prompts refilled), and ``VSPOReplayBufferAsync`` does VSPO per finished
group over it (its docstring). Each buffer runs in the trainer modes it was built for: the sync
ones in ``sync``, the async ones in ``colocate_async`` and ``separate_async``; any other mode is a
``ConfigError`` naming the buffer to use instead, never a silent loss of eviction or refill.

``VSPOReplayBuffer`` adds VSPO's value-based sampling. Once the step's groups have all finished:

1. every group is judged on ``algorithm.vspo.metric`` (mean, std, task value V) over its counted
   trajectories (``vspo.counted``: the ones with a trained token, exactly those the ``vspo``
   estimator uses), so a copy is never spent on a group whose advantages come out zero;
2. groups verl failed outright (no trajectory stored) are replaced by fresh prompts until
   ``batch_size`` groups have trajectories: the batch never comes out short;
3. when no group is informative (std > 0) it asks for fresh prompts, at most
   ``max_extra_batches * batch_size`` per step, and judges those too;
4. zero-variance groups are evicted and their slots filled with copies of informative groups
   drawn with probability ∝ V (``vspo.plan_batch``); a copy is written back to the store under
   a new uid ``<uid>~copy<k>``, from which the ``vspo`` estimator reads k for its smoothing.

Corner cases: every group zero-variance (after the extra prompts) keeps the first ``batch_size``
groups as they are, as GRPO would; every group failed aborts once the replacements are spent;
a single group is kept as it is. Metrics per step: ``vspo/evicted_groups``, ``vspo/copies``,
``vspo/extra_prompts``, ``vspo/replaced_failed``, ``vspo/mean_value``, ``vspo/zero_variance_share``,
``vspo/r_max``. Validation batches are sampled by the base class, untouched.
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
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync  # noqa: E402

from agentgym.errors import ConfigError, TrainingAborted  # noqa: E402
from agentgym.integrations.rollouts import FailureBudget  # noqa: E402
from agentgym.integrations.verl.vspo import (  # noqa: E402
    COPY_SEPARATOR,
    GroupStats,
    VSPOConfig,
    copy_index,
    copy_uid,
    counted,
    draw_copies,
    effective_r_max,
    group_stats,
    plan_batch,
)

__all__ = ["AgentGymReplayBuffer", "VSPOReplayBuffer", "AgentGymReplayBufferAsync", "VSPOReplayBufferAsync",
           "audit_batch"]

SYNC_MODES = ("sync",)
ASYNC_MODES = ("colocate_async", "separate_async")


class _Audited:
    """The run-level audit, shared by the sync and async buffers; refuses a mode it was not built for."""

    MODES: tuple[str, ...] = SYNC_MODES
    COUNTERPART = ""  # the buffer to use in the other trainer modes
    trainer_mode: str

    def _audit_setup(self, sampler_kwargs: Any) -> None:
        if self.trainer_mode not in self.MODES:
            raise ConfigError("trainer.v1.trainer_mode", self.trainer_mode,
                              f"{' or '.join(self.MODES)} for {type(self).__name__} (in {self.trainer_mode} set "
                              f"trainer.v1.sampler.custom_sampler.name={self.COUNTERPART})")
        from agentgym.integrations.verl.config import AgentGymConfig

        self.agentgym = AgentGymConfig.from_trainer_config(sampler_kwargs)
        self.budget = FailureBudget(self.agentgym.max_failed_share, self.agentgym.failure_window,
                                    setting="agentgym.max_failed_share")

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[KVBatchMeta, dict]:
        batch, metrics = self._sample(global_steps, partition_id, batch_size)
        if partition_id != "val":
            batch, audit = audit_batch(batch, batch_size, global_steps, self.budget)
            metrics = {**metrics, **audit}
        return batch, metrics

    def _sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[KVBatchMeta, dict]:
        return super().sample(global_steps, partition_id, batch_size)  # type: ignore[misc]


class AgentGymReplayBuffer(_Audited, ReplayBuffer):
    """verl's sync replay buffer with agentgym's run-level audit (see the module docstring)."""

    COUNTERPART = "AgentGymReplayBufferAsync"

    def __init__(self, *args: Any, sampler_kwargs: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, sampler_kwargs=sampler_kwargs, **kwargs)
        self._audit_setup(sampler_kwargs)


class AgentGymReplayBufferAsync(_Audited, ReplayBufferAsync):
    """verl's async replay buffer (staleness eviction, failed groups evicted and exactly k prompts
    refilled) with agentgym's run-level audit; for ``colocate_async`` and ``separate_async``."""

    MODES = ASYNC_MODES
    COUNTERPART = "AgentGymReplayBuffer"

    def __init__(self, *args: Any, sampler_kwargs: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, sampler_kwargs=sampler_kwargs, **kwargs)
        self._audit_setup(sampler_kwargs)


def audit_batch(batch: KVBatchMeta, batch_size: int, global_steps: int,
                budget: FailureBudget) -> tuple[KVBatchMeta, dict[str, float]]:
    """The step's batch without the trajectories left out of training, and its counts.

    A trajectory is left out when something outside the model failed (its typed ``failure``),
    every reward term abstained, or it carries a configuration error; its keys leave the batch
    (and the store), so verl's estimators compute every group's baseline over the rest: a failure
    never enters a baseline as a zero. Raises ``TrainingAborted`` on a configuration error, when
    the failure budget is spent, or when nothing is left. Copies (``~copy``) repeat their source:
    counted once, dropped with it."""
    keys = [k for k in batch.keys if copy_index(k.split("_")[0]) == 0]
    fields = dict(zip(keys, _extra_fields(batch.partition_id, keys), strict=True))
    reasons = {key: _left_out(extra) for key, extra in fields.items()}
    fatal = next((extra["agentgym"]["fatal"] for extra in fields.values() if (extra.get("agentgym") or {}).get("fatal")),
                 None)
    if fatal:
        raise TrainingAborted(f"step {global_steps}: a trajectory met a configuration error, not the model's "
                              f"doing; fix it and relaunch: {fatal}")
    groups = {k.split("_")[0] for k in keys}
    missing_groups = max(0, batch_size - len({k.split("_")[0] for k in batch.keys}))  # a copy fills its own slot
    per_group = round(len(keys) / len(groups)) if groups else 1
    first_error = next(((fields[k].get("agentgym") or {}).get("error") or reason for k, reason in reasons.items()
                        if reason), None)
    metrics = budget.record(list(reasons.values()), global_steps, first_error=first_error,
                            extra={"group_failed_in_verl": missing_groups * per_group})
    metrics.update(_signal(fields))
    kept = [(key, tag) for key, tag in zip(batch.keys, batch.tags or [{}] * len(batch.keys), strict=True)
            if not reasons.get(_source_key(key))]
    if not kept:
        raise TrainingAborted(f"step {global_steps}: every trajectory of the step was left out of training "
                              f"({', '.join(sorted({r for r in reasons.values() if r}))}); first error: {first_error}")
    dropped = [key for key in batch.keys if reasons.get(_source_key(key))]
    if dropped:
        tq.kv_clear(keys=dropped, partition_id=batch.partition_id)
    infos = [extra.get("reward_extra_info") or {} for extra in fields.values()]
    lost = sum(1 for r in reasons.values() if r) + missing_groups * per_group
    expected = len(keys) + missing_groups * per_group
    metrics.update({**_staleness(batch, global_steps), "agentgym/trajectories": float(len(keys)),
                    "agentgym/masked": float(sum(1 for r in reasons.values() if r)),
                    "agentgym/masked_share": lost / expected if expected else 0.0,
                    "agentgym/env_failed": float(sum(bool(i.get("env_failed", 0.0)) for i in infos)),
                    "agentgym/abstained": float(sum(bool(i.get("abstained", 0.0)) for i in infos)),
                    "agentgym/unfinished": float(sum(bool(i.get("truncated", 0.0)) and not reasons[k]
                                                     for k, i in zip(fields, infos))),
                    "agentgym/failed_groups": float(missing_groups)})
    return KVBatchMeta(partition_id=batch.partition_id, keys=[k for k, _ in kept], tags=[t for _, t in kept],
                       fields=batch.fields, extra_info=batch.extra_info), metrics


def _signal(fields: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The reward lab's figures of the step's groups (``agentgym.rewards.lab.group_metrics``), every
    trajectory counted (a failed one shows as failed); undefined figures are left out of the log."""
    from agentgym.rewards.lab import group_metrics

    rows = [(key.split("_")[0], float(info.get("score", 0.0)), float(info.get("outcome", 0.0)),
             (extra.get("agentgym") or {}).get("breakdown"))
            for key, extra in fields.items() for info in [extra.get("reward_extra_info") or {}]]
    return {name: value for name, value in group_metrics(rows).items() if math.isfinite(value)}


def _left_out(extra: dict[str, Any]) -> str | None:
    """Why a trajectory is left out of training (``RolloutResult.left_out_reason``, as the loop wrote it)."""
    info, summary = extra.get("reward_extra_info") or {}, extra.get("agentgym") or {}
    if summary.get("fatal"):
        return "config_error"
    if summary.get("failure"):
        return str(summary["failure"])
    if info.get("masked", info.get("env_failed", 0.0)):
        return "abstained" if info.get("abstained") else "env_error"
    return None


def _source_key(key: str) -> str:
    """The original trajectory a key (or a copy's key, ``<uid>~copy<k>_...``) holds."""
    uid, sep, rest = key.partition("_")
    head, copy, tail = uid.rpartition(COPY_SEPARATOR)
    return f"{head}{sep}{rest}" if copy and tail.isdigit() else key


def _staleness(batch: KVBatchMeta, global_steps: int) -> dict[str, float]:
    """How far the step's trajectories are behind the step training on them (copies left out):
    ``schedule_lag``, steps since the one whose reward schedule scored it (the step its prompt was
    drawn in; 0 under the sync trainer); ``staleness``, policy versions between the oldest weights
    that generated it and the policy being updated (verl's worst case: ``global_steps - 1 - min``)."""
    lags, behind = [], []
    for key, tag in zip(batch.keys, batch.tags or [{}] * len(batch.keys), strict=True):
        if copy_index(key.split("_")[0]) or not isinstance(tag, dict):
            continue
        if tag.get("global_steps") is not None:
            lags.append(global_steps - int(tag["global_steps"]))
        if tag.get("min_global_steps") is not None:
            behind.append(global_steps - 1 - int(tag["min_global_steps"]))
    series = (("schedule_lag", lags), ("staleness", behind))
    return {f"agentgym/{name}/{stat}": float(fn(values)) for name, values in series if values
            for stat, fn in (("mean", np.mean), ("max", np.max))}


def _extra_fields(partition_id: str, keys: list[str]) -> list[dict[str, Any]]:
    if not keys:
        return []
    data = tq.kv_batch_get(keys=keys, partition_id=partition_id, select_fields=["extra_fields"])
    return [_plain_dict(value) for value in list(data["extra_fields"])]


def _plain_dict(value: Any) -> dict[str, Any]:
    value = getattr(value, "data", value)
    return dict(value) if isinstance(value, dict) else {}


class _Judged:
    """What both VSPO buffers do to finished groups: read their metric, judge them, write copies."""

    partitions: dict[str, dict[str, dict]]

    def _vspo_setup(self, sampler_kwargs: Any) -> None:
        section = sampler_kwargs.get("vspo", None) if sampler_kwargs is not None else None
        self.vspo = VSPOConfig.from_section(section)
        self._rng = np.random.default_rng(self.vspo.seed)
        self._seen_max = -math.inf
        self._rewards: dict[str, list[float]] = {}
        self._stored: dict[str, int] = {}  # trajectories in the store per group (0: verl failed it)

    def _stats(self, uid: str) -> GroupStats:
        return group_stats(uid, self._rewards.get(uid, []), effective_r_max(self.vspo, self._seen_max), self.vspo)

    def _group_metrics(self, groups: list[GroupStats]) -> dict[str, float]:
        zero = sum(1 for g in groups if not g.informative)
        return {"vspo/mean_value": float(np.mean([g.value for g in groups])) if groups else 0.0,
                "vspo/zero_variance_share": zero / len(groups) if groups else 0.0,
                "vspo/r_max": effective_r_max(self.vspo, self._seen_max) if math.isfinite(self._seen_max) else 0.0}

    def _judged(self, partition_id: str, uids: Any) -> list[GroupStats]:
        """The statistics of these finished groups (read from the store once per group)."""
        uids = list(uids)
        self._read_rewards(partition_id, [uid for uid in uids if uid not in self._rewards])
        return [self._stats(uid) for uid in uids]

    def _forget(self, uids: Any) -> None:
        for uid in uids:
            self._rewards.pop(uid, None)
            self._stored.pop(uid, None)

    def _read_rewards(self, partition_id: str, uids: list[str]) -> None:
        wanted = set(uids)
        keys = [key for key in self.partitions[partition_id] if key.split("_")[0] in wanted]
        for uid in uids:
            self._rewards[uid] = []
            self._stored[uid] = 0
        if not keys:
            return
        use_reward = self.vspo.metric == "reward"
        data = tq.kv_batch_get(keys=keys, partition_id=partition_id,
                               select_fields=[("rm_scores" if use_reward else "extra_fields"), "response_mask"])
        column = data["rm_scores"] if use_reward else data["extra_fields"]
        live = counted([float(m.sum().item()) for m in list(data["response_mask"])])
        for key, value, is_live in zip(keys, list(column), live, strict=True):
            uid = key.split("_")[0]
            self._stored[uid] += 1
            if not is_live:  # failed or masked: the estimator leaves it out of the baseline too
                continue
            number = float(value.sum().item()) if use_reward else _extra_metric(value, self.vspo.metric, key)
            self._rewards[uid].append(number)
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


class VSPOReplayBuffer(_Judged, AgentGymReplayBuffer):
    """The sync replay buffer with VSPO's eviction and value-proportional refill, audited."""

    COUNTERPART = "VSPOReplayBufferAsync"

    def __init__(self, *args: Any, sampler_kwargs: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, sampler_kwargs=sampler_kwargs, **kwargs)
        self._vspo_setup(sampler_kwargs)

    def _sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[KVBatchMeta, dict]:
        if partition_id == "val":
            return super()._sample(global_steps, partition_id, batch_size)
        budget, requested, replaced = int(self.vspo.max_extra_batches * batch_size), 0, 0
        while True:
            self._wait_until_settled(partition_id, batch_size)
            groups = self._judge(partition_id)
            stored = [g for g in groups if self._stored.get(g.uid)]
            short = batch_size - len(stored)
            if short > 0:  # verl failed these groups outright: replace them, or the batch comes out short
                if replaced >= 2 * batch_size:
                    raise TrainingAborted(
                        f"step {global_steps}: only {len(stored)} of {batch_size} groups have trajectories after "
                        f"{replaced} replacements; every session of the others raised (see the workers' logs)")
                self.refill_fn(short)
                replaced += short
                continue
            if self.vspo.refill == "none" or any(g.informative for g in stored) or requested >= budget:
                break
            ask = min(batch_size, budget - requested)
            self.refill_fn(ask)
            requested += ask
        plan = plan_batch(stored, batch_size, self.vspo, self._rng)
        plan.drop += [g.uid for g in groups if not self._stored.get(g.uid)]
        snapshot = dict(self.partitions[partition_id])
        self._clear_groups(partition_id, set(plan.drop))
        copy_keys, copy_tags = self._write_copies(partition_id, plan.copies, snapshot)
        batch = self._materialize_batch(partition_id, plan.keep, snapshot)
        self._forget(plan.keep + plan.drop)
        metrics = {**self._metrics(stored, plan, requested), "vspo/replaced_failed": float(replaced)}
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
        """Statistics of every terminal group, oldest first, over its counted trajectories."""
        terminal = self.finished_keys[partition_id] | self.failure_keys[partition_id]
        steps = self.prompt_global_steps[partition_id]
        order = sorted(terminal, key=lambda uid: (steps.get(uid, 0), uid))
        self._read_rewards(partition_id, [u for u in order if u not in self._rewards])
        return [self._stats(uid) for uid in order]

    def _metrics(self, groups: list[GroupStats], plan: Any, extra_prompts: int) -> dict[str, float]:
        return {**self._group_metrics(groups), "vspo/evicted_groups": float(plan.evicted),
                "vspo/copies": float(len(plan.copies)), "vspo/extra_prompts": float(extra_prompts)}


class VSPOReplayBufferAsync(_Judged, AgentGymReplayBufferAsync):
    """VSPO per finished group, over verl's async buffer (staleness eviction, exact-k refill), audited.

    A finished zero-variance group is evicted like any other (``filter_groups`` in verl's metrics)
    and exactly one fresh prompt replaces it, for a later step; the step does not wait for it: its
    slot is filled by a copy of an informative group already finished, drawn ∝ V and smoothed by
    the ``vspo`` estimator as in the sync buffer. At most ``max_extra_batches * batch_size`` groups
    are evicted so per step; past that, zero-variance groups are trained on as they are (GRPO)."""

    COUNTERPART = "VSPOReplayBuffer"

    def __init__(self, *args: Any, sampler_kwargs: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, sampler_kwargs=sampler_kwargs, **kwargs)
        self._vspo_setup(sampler_kwargs)
        self._evicted_zero = 0  # this step's zero-variance evictions: the slots copies may fill
        self._evict_budget = 0
        self._zero_uids: set[str] = set()

    def _sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[KVBatchMeta, dict]:
        if partition_id == "val":
            return super()._sample(global_steps, partition_id, batch_size)
        self._evict_budget = 0 if self.vspo.refill == "none" else int(self.vspo.max_extra_batches * batch_size)
        sampleable, metrics = self.wait_for_sampleable(global_steps, partition_id, batch_size)
        uids, snapshot, _ = self._select_prompt_uids(partition_id, sampleable, batch_size)
        groups = self._judged(partition_id, uids)
        informative = [g for g in groups if g.informative]
        copies = draw_copies(informative, batch_size - len(uids), self._rng, uniform=self.vspo.refill == "uniform")
        batch = self._materialize_batch(partition_id, uids, snapshot)
        copy_keys, copy_tags = self._write_copies(partition_id, copies, snapshot)
        self._forget(uids)
        evicted, self._evicted_zero = self._evicted_zero, 0  # evictions after this count for the next step
        metrics = {**metrics, **self._group_metrics(groups), "vspo/evicted_groups": float(evicted),
                   "vspo/copies": float(len(copies)), "vspo/extra_prompts": float(evicted)}
        return KVBatchMeta(partition_id=partition_id, keys=[*batch.keys, *copy_keys],
                           tags=[*batch.tags, *copy_tags]), metrics

    # -- verl's hooks ----------------------------------------------------------------------------
    def _terminal_eviction_reasons(self, global_steps: int, partition_id: str) -> tuple[set, set, set, Any]:
        stale, filtered, failed, counts = super()._terminal_eviction_reasons(global_steps, partition_id)
        room = self._evict_budget - self._evicted_zero
        self._zero_uids = set()
        if partition_id == "val" or room <= 0:
            return stale, filtered, failed, counts
        steps = self.prompt_global_steps[partition_id]
        candidates = sorted(self.finished_keys[partition_id] - stale - filtered - failed,
                            key=lambda uid: (steps.get(uid, 0), uid))
        zero = [g.uid for g in self._judged(partition_id, candidates) if not g.informative and self._stored.get(g.uid)]
        self._zero_uids = set(zero[:room])
        return stale, filtered | self._zero_uids, failed, counts

    def _evict_terminal_groups(self, global_steps: int, partition_id: str, reasons: Any) -> Any:
        evicted, stale_count, filtered_count, metrics = super()._evict_terminal_groups(global_steps, partition_id,
                                                                                        reasons)
        self._evicted_zero += len(evicted & self._zero_uids)
        self._forget(evicted)
        return evicted, stale_count, filtered_count, metrics

    def _has_enough_samples(self, global_steps: int, partition_id: str, batch_size: int,
                            sampleable_keys: set[str]) -> bool:
        """Enough when the finished groups fill the batch, counting each zero-variance group evicted
        this step as a slot a copy fills (so at least one informative group is needed to copy)."""
        fillable = 0
        if partition_id != "val" and any(g.informative for g in self._judged(partition_id, sampleable_keys)):
            fillable = min(self._evicted_zero, batch_size - 1)
        return super()._has_enough_samples(global_steps, partition_id, batch_size - fillable, sampleable_keys)


def _extra_metric(extra_fields: Any, metric: str, key: str) -> float:
    fields = getattr(extra_fields, "data", extra_fields)
    info = fields.get("reward_extra_info", {}) if isinstance(fields, dict) else {}
    if metric not in info:
        raise ConfigError("algorithm.vspo.metric", metric,
                          f"a key of the trajectories' reward_extra_info (trajectory {key} has {sorted(info)})")
    return float(info[metric])
