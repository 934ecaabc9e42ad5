"""The async replay buffers (verl's ``ReplayBufferAsync`` + agentgym's audit, VSPO per finished group)
over an in-memory TransferQueue (the real one on Ray: ``agentgym verl selftest``, async part)."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

from omegaconf import OmegaConf  # noqa: E402

from agentgym.errors import ConfigError, TrainingAborted  # noqa: E402
from agentgym.integrations.verl import sampler  # noqa: E402
from agentgym.integrations.verl.vspo import copy_index  # noqa: E402

N = 4


@pytest.fixture
def store(monkeypatch):
    from verl_harness import patch_tq

    return patch_tq(monkeypatch)


class Refill:
    """The trainer's ``refill_fn``: records each request and puts that many prompts in flight."""

    def __init__(self, store, step: int = 1) -> None:
        self.store, self.step, self.calls = store, step, []

    def __call__(self, n: int) -> int:
        self.calls.append(n)
        for _ in range(n):
            uid = f"fresh{sum(self.calls[:-1]) + _}"
            self.store.tags["train"][uid] = {"is_prompt": True, "status": "pending", "global_steps": self.step}
        return n


def build(name, *, mode="colocate_async", refill=None, threshold=100, vspo=None, agentgym=None):
    return getattr(sampler, name)(
        trainer_mode=mode, trainer_config=OmegaConf.create({}), max_off_policy_threshold=threshold,
        max_off_policy_strategy="drop", poll_interval=0.0, refill_fn=refill or (lambda n: n),
        sampler_kwargs=OmegaConf.create({"vspo": vspo or {}, "agentgym": agentgym or {}}))


def uids(batch):
    return sorted({k.split("_")[0] for k in batch.keys})


@pytest.mark.parametrize("name,mode,use", [
    ("AgentGymReplayBuffer", "colocate_async", "AgentGymReplayBufferAsync"),
    ("VSPOReplayBuffer", "separate_async", "VSPOReplayBufferAsync"),
    ("AgentGymReplayBufferAsync", "sync", "AgentGymReplayBuffer"),
    ("VSPOReplayBufferAsync", "sync", "VSPOReplayBuffer")])
def test_a_buffer_refuses_a_trainer_mode_it_was_not_built_for(name, mode, use):
    with pytest.raises(ConfigError, match=f"trainer_mode.*custom_sampler.name={use}"):
        build(name, mode=mode)


def test_stale_and_failed_groups_are_evicted_and_exactly_as_many_prompts_refilled(store):
    refill = Refill(store, step=3)
    store.add_group("old", [1, 0, 1, 0], step=1)  # 3 - 1 + 1 = 3 versions > threshold 2: stale
    store.add_group("bad", [1, 0, 1, 0], step=3, status="failure")
    store.add_group("new", [1, 1, 0, 0], step=3)
    store.add_group("ok", [0, 1, 0, 0], step=2)
    batch, metrics = build("AgentGymReplayBufferAsync", refill=refill, threshold=2).sample(3, "train", 2)
    assert uids(batch) == ["new", "ok"] and refill.calls == [2]
    assert not any(k.startswith(("old", "bad")) for k in store.tags["train"])
    assert metrics["training/off_policy/evicted_samples"] == 1
    assert metrics["agentgym/trajectories"] == 2 * N
    assert metrics["agentgym/schedule_lag/mean"] == 0.5 and metrics["agentgym/schedule_lag/max"] == 1


def test_the_async_audit_aborts_on_a_configuration_error(store):
    fatal = {"reward_extra_info": {"masked": 1.0}, "agentgym": {"fatal": "ConfigError: no such preset"}}
    store.add_group("a", [0, 0, 0, 0], extra=[fatal] * N)
    with pytest.raises(TrainingAborted, match="no such preset"):
        build("AgentGymReplayBufferAsync").sample(1, "train", 1)


def test_the_async_audit_aborts_when_most_trajectories_are_masked(store):
    store.add_group("a", [1, 0, 0, 0], masked=[True, True, True, False])
    with pytest.raises(TrainingAborted, match="3 of the last 4 rollouts were left out"):
        build("AgentGymReplayBufferAsync").sample(1, "train", 1)


def test_vspo_evicts_zero_variance_groups_refills_them_and_fills_their_slots_with_copies(store):
    refill = Refill(store)
    store.add_group("a", [1, 0, 0, 0])
    store.add_group("b", [0, 0, 0, 0])
    store.add_group("c", [1, 1, 1, 0])
    store.add_group("d", [1, 1, 1, 1])
    buffer = build("VSPOReplayBufferAsync", refill=refill, vspo={"r_max": 1.0})
    batch, metrics = buffer.sample(1, "train", 4)
    groups = uids(batch)
    assert [g for g in groups if not copy_index(g)] == ["a", "c"] and len(groups) == 4 and len(batch.keys) == 4 * N
    assert {g.split("~")[0] for g in groups if copy_index(g)} <= {"a", "c"}
    assert sum(refill.calls) == 2  # exactly one fresh prompt per evicted group, for a later step
    assert sorted(u for u, t in store.tags["train"].items() if t.get("status") == "pending") == ["fresh0", "fresh1"]
    assert metrics["vspo/evicted_groups"] == 2 and metrics["vspo/copies"] == 2
    assert metrics["training/filter_groups/evicted_samples"] == 2
    assert metrics["agentgym/trajectories"] == 2 * N  # copies are not counted twice

    # The refills finish: the next step trains on them, and this step's evictions start from zero.
    store.add_group("fresh0", [1, 0, 1, 0], step=1)
    store.add_group("fresh1", [0, 1, 1, 1], step=1)
    batch, metrics = buffer.sample(2, "train", 2)
    assert uids(batch) == ["fresh0", "fresh1"] and metrics["vspo/evicted_groups"] == 0 and sum(refill.calls) == 2


def test_vspo_async_waits_for_a_group_to_copy_from(store):
    store.add_group("b", [0, 0, 0, 0])
    store.add_group("d", [1, 1, 1, 1])

    def refill(n):  # one replacement comes back informative, the other is still generating
        store.add_group("r0", [1, 0, 0, 0])
        store.tags["train"]["r1"] = {"is_prompt": True, "status": "running", "global_steps": 1}
        return n

    buffer = build("VSPOReplayBufferAsync", refill=refill, vspo={"max_extra_batches": 2.0})
    batch, metrics = buffer.sample(1, "train", 2)
    assert uids(batch) == ["r0", "r0~copy1"] and metrics["vspo/copies"] == 1 and metrics["vspo/evicted_groups"] == 2


def test_vspo_async_past_its_eviction_budget_trains_zero_variance_groups_as_grpo_would(store):
    for uid, rewards in (("a", [1, 0, 0, 0]), ("b", [0, 0, 0, 0]), ("c", [1, 1, 1, 1])):
        store.add_group(uid, rewards)
    refill = Refill(store)
    buffer = build("VSPOReplayBufferAsync", refill=refill, vspo={"max_extra_batches": 0.0})
    batch, metrics = buffer.sample(1, "train", 3)
    assert uids(batch) == ["a", "b", "c"] and refill.calls == [] and metrics["vspo/copies"] == 0


def test_a_turn_aborted_inside_its_closing_tag_is_cut_as_the_uninterrupted_one(tmp_path):
    # verl's own partial-rollout client over the selftest's aborting stand-in server (no Ray needed)
    from agentgym.integrations.verl.preflight import selftest_async as part
    from agentgym.integrations.verl.prepare import prepare_rows
    from verl_harness import make_tokenizer

    tokenizer = make_tokenizer()
    tokenizer.save_pretrained(tmp_path)  # the env counts observation tokens with the policy's tokenizer
    rows = prepare_rows("SearchQA-v0", split="train", limit=3)
    config = part._config(tmp_path, 2)
    figures = part._check_partial_rollouts(config, tokenizer, rows[:2], part._plans(rows, 2), 2)
    assert figures["aborts"] == 8 and figures["ran_past"] >= 4
