"""The VSPO replay buffer (a verl V1 ``ReplayBuffer``) over an in-memory TransferQueue: eviction,
value-proportional copies written under new uids, bounded extra generation, step metrics, and the
copies' advantages through ``compute_advantage(adv_estimator="vspo")``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

pytest.importorskip("verl")
tq = pytest.importorskip("transfer_queue")

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from agentgym.errors import ConfigError  # noqa: E402
from agentgym.integrations.verl.vspo import copy_index  # noqa: E402

N = 4  # rollouts per prompt


@pytest.fixture
def store(monkeypatch):
    from verl_harness import patch_tq

    return patch_tq(monkeypatch)


def make_buffer(vspo=None, refill_fn=None, mode="sync"):
    from verl_harness import make_buffer as build

    return build(vspo=vspo, refill_fn=refill_fn, mode=mode)


def groups_of(keys):
    return sorted({k.split("_")[0] for k in keys})


def test_zero_variance_groups_are_replaced_by_copies(store):
    store.add_group("a", [1, 0, 0, 0])
    store.add_group("b", [0, 0, 0, 0])
    store.add_group("c", [1, 1, 1, 0])
    store.add_group("d", [1, 1, 1, 1])
    batch, metrics = make_buffer().sample(global_steps=1, partition_id="train", batch_size=4)
    groups = groups_of(batch.keys)
    originals = [g for g in groups if copy_index(g) == 0]
    assert originals == ["a", "c"] and len(groups) == 4 and len(batch.keys) == 4 * N
    copies = [g for g in groups if copy_index(g) > 0]
    assert all(g.split("~")[0] in {"a", "c"} for g in copies)
    assert not any(k.startswith(("b_", "d_")) for k in store.rows["train"])  # evicted from the store
    for key in batch.keys:  # a copy carries its own uid and the source's trajectories
        assert store.rows["train"][key]["uid"] == key.split("_")[0]
        source = store.rows["train"].get(key.replace(key.split("_")[0], key.split("~")[0], 1))
        assert source is None or torch.equal(source["rm_scores"], store.rows["train"][key]["rm_scores"])
    assert metrics["vspo/evicted_groups"] == 2 and metrics["vspo/copies"] == 2
    assert metrics["vspo/zero_variance_share"] == 0.5 and metrics["vspo/extra_prompts"] == 0
    v_a, v_c = 0.75 * math.sqrt(0.1875), 0.25 * math.sqrt(0.1875)
    assert metrics["vspo/mean_value"] == pytest.approx((v_a + v_c) / 4)
    assert metrics["vspo/r_max"] == 1.0


def test_copies_follow_value_over_many_steps(store):
    buffer = make_buffer({"seed": 11})
    counts = {"a": 0, "c": 0}
    for step in range(300):
        store.rows["train"].clear(), store.tags["train"].clear()
        store.add_group("a", [1, 0, 0, 0], step)
        store.add_group("c", [1, 1, 1, 0], step)
        store.add_group("z", [0, 0, 0, 0], step)
        batch, _ = buffer.sample(global_steps=step, partition_id="train", batch_size=3)
        for group in groups_of(batch.keys):
            if copy_index(group):
                counts[group.split("~")[0]] += 1
    share_a = counts["a"] / 300  # P(a) = V_a / (V_a + V_c) = .75 / (.75 + .25)
    assert abs(share_a - 0.75) < 4 * math.sqrt(0.75 * 0.25 / 300)


def test_all_zero_batch_asks_for_fresh_prompts_within_the_bound(store):
    fresh = itertools.count()
    asked = []

    def refill(n):
        asked.append(n)
        for _ in range(n):
            store.add_group(f"new{next(fresh)}", [1, 0, 1, 0])
        return n

    store.add_group("a", [0, 0, 0, 0])
    store.add_group("b", [1, 1, 1, 1])
    batch, metrics = make_buffer(refill_fn=refill).sample(global_steps=1, partition_id="train", batch_size=2)
    assert asked == [2] and metrics["vspo/extra_prompts"] == 2
    assert groups_of(batch.keys) == ["new0", "new1"] and metrics["vspo/evicted_groups"] == 2


def test_extra_generation_is_bounded_and_then_zero_groups_stay(store):
    fresh = itertools.count()
    asked = []

    def refill(n):
        asked.append(n)
        for _ in range(n):
            store.add_group(f"new{next(fresh)}", [0, 0, 0, 0])
        return n

    store.add_group("a", [0, 0, 0, 0])
    store.add_group("b", [0, 0, 0, 0])
    buffer = make_buffer({"max_extra_batches": 1.5}, refill_fn=refill)
    batch, metrics = buffer.sample(global_steps=1, partition_id="train", batch_size=2)
    assert sum(asked) == 3 and asked == [2, 1]
    assert len(groups_of(batch.keys)) == 2 and metrics["vspo/copies"] == 0
    assert metrics["vspo/zero_variance_share"] == 1.0


def test_outcome_metric_reads_reward_extra_info(store):
    store.add_group("a", [1.0, 0.5, 0.5, 0.5])  # shaped spread, but outcome only on one
    store.add_group("b", [0.5, 0.2, 0.3, 0.5])  # shaped spread, outcome all zero: evicted on outcome
    batch, metrics = make_buffer({"metric": "outcome"}).sample(global_steps=1, partition_id="train", batch_size=2)
    assert metrics["vspo/evicted_groups"] == 1
    assert [g for g in groups_of(batch.keys) if copy_index(g) == 0] == ["a"]


def test_missing_metric_names_the_keys_there_are(store):
    store.add_group("a", [1, 0, 0, 0])
    with pytest.raises(ConfigError, match="reward_extra_info"):
        make_buffer({"metric": "acc"}).sample(global_steps=1, partition_id="train", batch_size=1)


def test_only_the_sync_trainer_is_supported():
    with pytest.raises(ConfigError, match="trainer_mode"):
        make_buffer(mode="colocate_async")


def test_sampled_batch_through_the_vspo_estimator(store):
    from verl.protocol import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    import agentgym.integrations.verl.plugin  # noqa: F401

    store.add_group("a", [1, 0, 0, 0])
    store.add_group("z", [0, 0, 0, 0])
    batch, _ = make_buffer({"seed": 0}).sample(global_steps=1, partition_id="train", batch_size=2)
    data = store.kv_batch_get(batch.keys, "train", select_fields=["uid", "rm_scores", "response_mask"])
    scores = data["rm_scores"].to_padded_tensor(0.0)
    proto = DataProto.from_dict(
        tensors={"token_level_rewards": scores, "response_mask": data["response_mask"].to_padded_tensor(0)},
        non_tensors={"uid": np.array(list(data["uid"]), dtype=object)})
    out = compute_advantage(proto, adv_estimator="vspo", config=OmegaConf.create({"vspo": {"clip": None}}))
    first = out.batch["advantages"][:, 0]
    uids = list(data["uid"])
    original = [float(first[i]) for i, u in enumerate(uids) if u == "a"]
    copied = [float(first[i]) for i, u in enumerate(uids) if u == "a~copy1"]
    assert sorted(copied) == pytest.approx(sorted(x / 2 for x in original), abs=1e-6)
