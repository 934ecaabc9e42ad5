"""Regression tests for the defects of issue 11 ("train on nothing"), each failing on the branch point.

The replay buffers run over an in-memory TransferQueue (``verl_harness.MemoryTQ``; the real one on
Ray is exercised by ``agentgym verl selftest``, part 2); the agent loop runs against the harness's
fake LLM server, a stand-in for vLLM/SGLang, which need a GPU."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

import verl_harness as h  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.errors import TrainingAborted  # noqa: E402
from agentgym.integrations.verl import plugin  # noqa: E402,F401  (registers the loop and the estimator)
from agentgym.integrations.verl.prepare import prepare_rows  # noqa: E402
from agentgym.integrations.verl.vspo import copy_index  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
N = 4


@pytest.fixture(scope="module")
def tokenizer():
    return h.make_tokenizer()


@pytest.fixture
def store(monkeypatch):
    return h.patch_tq(monkeypatch)


def groups_of(keys):
    return sorted({k.split("_")[0] for k in keys})


# -- prs_vspo: its reward works with what `pip install 'agentgym-rl[verl]'` installs -----------------
_PLAY_PRS = textwrap.dedent("""
    import importlib.abc, json, sys
    blocked = set(json.loads(sys.argv[1]))

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ImportError(f"{name} is not installed by agentgym-rl[verl]")
            return None

    sys.meta_path.insert(0, Blocker())
    import gymnasium, agentgym  # noqa: F401
    env = gymnasium.make("SearchQA-v0", tasks="train", synthetic_size="small", reward="prs/short")
    env.reset(options={"task_index": 0})
    gold = env.unwrapped.task.golden_answers[0]
    # a near miss: an exact match is paid without n-gram statistics, a near miss needs sacrebleu's
    _, reward, terminated, _, info = env.step(f"<answer> {gold} or so they say </answer>")
    breakdown = info["reward"]
    assert terminated and not breakdown.get("abstained"), breakdown
    assert all(not t["abstained"] for t in breakdown["terms"].values()), breakdown["terms"]
    print(json.dumps({"reward": reward}))
""")


def _installed_by(requirements: list[str]) -> set[str]:
    """Normalised names of the distributions ``requirements`` install, transitively (as pip resolves them
    here: only those present in this environment can be followed)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [(Requirement(r), frozenset()) for r in requirements]
    while todo:
        req, _ = todo.pop()
        name = canonicalize_name(req.name)
        key = f"{name}[{','.join(sorted(req.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        try:
            dist = distribution(req.name)
        except PackageNotFoundError:
            continue
        for text in dist.requires or []:
            sub = Requirement(text)
            env = [{"extra": e} for e in (req.extras or {""})]
            if sub.marker is None or any(sub.marker.evaluate(e) for e in env):
                todo.append((sub, frozenset()))
    return {s for s in seen if "[" not in s}


def test_the_prs_vspo_reward_works_with_what_the_verl_extra_installs():
    """Defect: `agentgym-rl[verl]` did not install sacrebleu, so prs/short raised in every trajectory and
    `on_env_error: mask` trained on nothing. The episode runs with every module outside agentgym's
    core and `verl` dependencies blocked, exactly what a user of `pip install 'agentgym-rl[verl]'` has."""
    import tomllib
    from importlib.metadata import packages_distributions

    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    allowed = _installed_by(project["dependencies"] + project["optional-dependencies"]["verl"]) | {project["name"]}
    blocked = sorted(module for module, dists in packages_distributions().items()
                     if not module.startswith("_") and not any(canonicalize_name(d) in allowed for d in dists))
    assert "matplotlib" in blocked and "mkdocs" in blocked  # the blocker is live: other extras are out
    result = subprocess.run([sys.executable, "-c", _PLAY_PRS, json.dumps(blocked)], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert 0.2 < json.loads(result.stdout.strip().splitlines()[-1])["reward"] < 1.0  # format 0.2 + BLEU credit


# -- a configuration error inside a trajectory aborts the run -----------------------------------
def test_a_curriculum_without_a_run_length_aborts_at_the_first_step(tokenizer, store):
    """Defect: `agentgym.reward=planner_r1/curriculum` with no total_steps raised ConfigError inside every
    trajectory, masked to reward 0. Now the trajectory carries it and the replay buffer aborts the run."""
    rows = prepare_rows("TravelPlanner-v0", split="train", limit=1)
    config = h.trainer_config(agentgym={"reward": "planner_r1/curriculum", "max_turns": 2})
    outs = h.run_rows(tokenizer, h.FakeServer(tokenizer, seed=1), config, rows, n=N, global_steps=3)
    fatal = [o.extra_fields["agentgym"]["fatal"] for o in outs]
    assert all(f and "total_steps" in f for f in fatal), fatal
    assert all(sum(o.response_mask) == 0 for o in outs)
    store.add_outputs("g0", outs)
    with pytest.raises(TrainingAborted, match="configuration error.*total_steps"):
        h.make_buffer("AgentGymReplayBuffer").sample(global_steps=3, partition_id="train", batch_size=1)


def test_a_missing_reward_dependency_aborts_rather_than_masks(tokenizer, store, monkeypatch):
    rows = prepare_rows("SearchQA-v0", split="train", limit=1, env_kwargs={"synthetic_size": "small"})
    monkeypatch.setitem(sys.modules, "sacrebleu.metrics.helpers", None)  # as if sacrebleu were not installed
    server = h.FakeServer(tokenizer, lambda rid, turn: "<answer> Paris </answer>")
    outs = h.run_rows(tokenizer, server, h.trainer_config(agentgym={"reward": "prs/short"}), rows, n=2)
    assert all("sacrebleu" in (o.extra_fields["agentgym"]["fatal"] or "") for o in outs)
    store.add_outputs("g0", outs)
    with pytest.raises(TrainingAborted, match="sacrebleu"):
        h.make_buffer("VSPOReplayBuffer").sample(global_steps=1, partition_id="train", batch_size=1)


# -- the failure budget; failed trajectories leave the batch --------------------------------------
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(masked=st.lists(st.integers(0, N), min_size=1, max_size=4), share=st.sampled_from([0.25, 0.5, 0.75]))
def test_a_step_with_too_many_failed_trajectories_aborts_and_the_rest_leave_the_batch(monkeypatch, masked, share):
    store = h.patch_tq(monkeypatch)
    for g, count in enumerate(masked):
        store.add_group(f"g{g}", [float(i % 2) for i in range(N)], masked=[i < count for i in range(N)])
    buffer = h.make_buffer("AgentGymReplayBuffer", agentgym={"max_failed_share": share})
    total, lost = N * len(masked), sum(masked)
    if lost / total > share:
        with pytest.raises(TrainingAborted) as caught:
            buffer.sample(global_steps=2, partition_id="train", batch_size=len(masked))
        assert f"{lost} of the last {total} rollouts were left out of training (env_error {lost})" in str(caught.value)
        assert "RemoteTimeout: env call timed out" in str(caught.value)  # the first error, as the env said it
    else:
        batch, metrics = buffer.sample(global_steps=2, partition_id="train", batch_size=len(masked))
        assert metrics["agentgym/masked"] == lost and metrics["agentgym/env_failed"] == lost
        assert metrics["agentgym/masked_share"] == pytest.approx(lost / total)
        assert metrics["agentgym/trajectories"] == total
        assert metrics.get("agentgym/failed/env_error", 0.0) == pytest.approx(lost / total)
        assert len(batch.keys) == total - lost  # the failed ones left the batch, and the store
        assert all(int(k.split("_")[1]) >= count for k in batch.keys for g, count in enumerate(masked)
                   if k.startswith(f"g{g}_"))
        assert not set(store.rows["train"]) & {f"g{g}_{i}_0" for g, c in enumerate(masked) for i in range(c)}


def test_the_failure_budget_looks_over_a_window_of_steps(monkeypatch):
    """One bad step among good ones passes; the budget counts the last failure_window trajectories."""
    store = h.patch_tq(monkeypatch)
    buffer = h.make_buffer("AgentGymReplayBuffer", agentgym={"max_failed_share": 0.5, "failure_window": 16})
    for step, failed in enumerate([0, 0, 3, 0], start=1):
        store.add_group(f"s{step}", [0.0, 1.0, 0.0, 1.0], step=step, masked=[i < failed for i in range(N)])
        batch, metrics = buffer.sample(global_steps=step, partition_id="train", batch_size=1)
        store.kv_clear(batch.keys, "train")
        assert metrics["agentgym/failed_share"] == pytest.approx(3 / 12 if step == 3 else (0.0 if step < 3 else 3 / 16))
    for step in (5, 6):  # 3 of 4 fail again: 6 of the last 16 pass, 9 of the last 16 stop the run
        store.add_group(f"s{step}", [0.0, 1.0, 0.0, 1.0], step=step, masked=[True, True, True, False])
        if step == 5:
            buffer.sample(global_steps=step, partition_id="train", batch_size=1)
            continue
        with pytest.raises(TrainingAborted, match=r"9 of the last 16 rollouts were left out of training \(env_error 9\)"):
            buffer.sample(global_steps=step, partition_id="train", batch_size=1)


# -- stop strings: nothing after the first complete action is trained on --------------------------
@pytest.mark.parametrize("stop_at_action", [True, False])
def test_text_after_the_first_search_is_cut_and_stop_strings_reach_the_server(tokenizer, stop_at_action):
    """Defect: no stop strings; an invented <information> block after </search> stayed with loss mask 1."""
    rows = prepare_rows("SearchQA-v0", split="train", limit=1, env_kwargs={"synthetic_size": "small"})
    replies = ["<search> capital of France </search> <information> Doc 1(Title: made up) </information>",
               "<answer> Paris </answer>"]
    server = h.FakeServer(tokenizer, lambda rid, turn: replies[min(turn, 1)])
    config = h.trainer_config(agentgym={"max_turns": 3, "stop_at_action": stop_at_action}, rollout_name="vllm")
    (out,) = h.run_rows(tokenizer, server, config, rows)
    trained = tokenizer.decode([t for t, m in zip(out.response_ids, out.response_mask) if m])
    params = server.calls[0]["sampling_params"]
    if stop_at_action:
        assert params["stop"] == ["</search>", "</answer>"] and params["include_stop_str_in_output"] is True
        assert "made up" not in trained and trained.count("</search>") == 1
        # the turn the cut closed ends with the end-of-turn token, untrained: the chat stays well formed
        end = out.response_ids.index(tokenizer.eos_token_id)
        assert out.response_mask[end] == 0 and tokenizer.decode(out.response_ids[:end]).endswith("</search>")
    else:
        assert "stop" not in params and "made up" in trained
    assert out.extra_fields["reward_extra_info"]["model_turns"] == 2


# -- sampler and estimator agree; the sampler never returns a short batch -----------------------
def _advantages(store, keys):
    from omegaconf import OmegaConf
    from verl.protocol import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    data = store.kv_batch_get(keys, "train", select_fields=["uid", "rm_scores", "response_mask"])
    padded = lambda t, v: t.to_padded_tensor(v) if t.is_nested else t  # noqa: E731  (one row is not nested)
    proto = DataProto.from_dict(
        tensors={"token_level_rewards": padded(data["rm_scores"], 0.0),
                 "response_mask": padded(data["response_mask"], 0)},
        non_tensors={"uid": np.array(list(data["uid"]), dtype=object)})
    out = compute_advantage(proto, adv_estimator="vspo", config=OmegaConf.create({"vspo": {"clip": None}}))
    by_group: dict[str, float] = {}
    for uid, row in zip(list(data["uid"]), out.batch["advantages"].abs().amax(dim=-1).tolist()):
        by_group[uid] = max(by_group.get(uid, 0.0), row)
    return by_group


_trajectory = st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.booleans())  # (reward, masked)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(groups=st.lists(st.lists(_trajectory, min_size=N, max_size=N), min_size=1, max_size=5))
def test_the_sampler_spends_copies_only_where_the_estimator_gives_advantages(monkeypatch, groups):
    """Defect: the sampler counted failed trajectories in a group's spread, the estimator did not, so
    copies went to groups whose advantages came out zero. Property: a group survives (and is copied)
    exactly when the estimator gives it a non-zero advantage, whenever any group does."""
    store = h.patch_tq(monkeypatch)
    for g, group in enumerate(groups):
        store.add_group(f"g{g}", [r for r, _ in group], masked=[m for _, m in group])
    buffer = h.make_buffer(agentgym={"max_failed_share": 1.0})
    if all(m for group in groups for _, m in group):
        with pytest.raises(TrainingAborted, match="every trajectory of the step was left out"):
            buffer.sample(global_steps=1, partition_id="train", batch_size=len(groups))
        return
    batch, _ = buffer.sample(global_steps=1, partition_id="train", batch_size=len(groups))
    masked = {f"g{g}_{i}_0" for g, group in enumerate(groups) for i, (_, m) in enumerate(group) if m}
    assert not {k.split("~")[0].split("_")[0] + "_" + k.split("_", 1)[1] for k in batch.keys} & masked
    advantage = _advantages(store, batch.keys)
    kept = {g: a for g, a in advantage.items() if copy_index(g) == 0}
    if any(a > 0 for a in advantage.values()):
        assert all(a > 0 for a in advantage.values()), advantage  # zero-advantage groups were evicted
    assert {g.split("~")[0] for g in advantage} <= set(kept)


def test_copies_fill_their_slots_and_are_not_counted_as_failed_groups(store):
    """Found by the selftest's real TransferQueue: the audit counted a group and its copies as one,
    so a batch refilled with copies looked like groups verl had failed, and the run aborted."""
    store.add_group("a", [1, 0, 0, 0])
    for g in "bcd":
        store.add_group(g, [0, 0, 0, 0])
    batch, metrics = h.make_buffer().sample(global_steps=1, partition_id="train", batch_size=4)
    assert metrics["vspo/copies"] == 3 and metrics["agentgym/failed_groups"] == 0
    assert metrics["agentgym/masked_share"] == 0.0 and len(batch.keys) == 4 * N


def test_a_lone_counted_trajectory_gets_no_advantage(store):
    """GRPO pays a group of one its raw score; VSPO's estimator agrees with the sampler: no baseline, 0."""
    store.add_group("a", [1.0, 0.0, 0.0, 0.0], masked=[False, True, True, True])
    batch, _ = h.make_buffer(agentgym={"max_failed_share": 1.0}).sample(global_steps=1, partition_id="train",
                                                                         batch_size=1)
    assert batch.keys == ["a_0_0"] and _advantages(store, batch.keys) == {"a": 0.0}


def test_a_group_verl_failed_is_replaced_so_the_batch_is_never_short(store):
    """Defect: a group whose sessions all raised in verl (status failure, nothing stored) left the batch
    one group short, and verl raised on the size."""
    store.add_group("a", [1, 0, 0, 0])
    store.tags["train"]["b"] = {"is_prompt": True, "status": "failure", "global_steps": 1}
    asked = []

    def refill(n):
        asked.append(n)
        store.add_group(f"new{len(asked)}", [0, 1, 1, 1])
        return n

    batch, metrics = h.make_buffer(refill_fn=refill).sample(global_steps=1, partition_id="train", batch_size=2)
    assert asked == [1] and groups_of(batch.keys) == ["a", "new1"] and len(batch.keys) == 2 * N
    assert metrics["vspo/replaced_failed"] == 1


def test_corner_case_every_group_zero_variance_keeps_the_batch_as_grpo_would(store):
    for g in "abc":
        store.add_group(g, [1, 1, 1, 1] if g == "b" else [0, 0, 0, 0])
    batch, metrics = h.make_buffer(vspo={"max_extra_batches": 0}).sample(global_steps=1, partition_id="train",
                                                                        batch_size=3)
    assert groups_of(batch.keys) == ["a", "b", "c"] and metrics["vspo/copies"] == 0
    assert set(_advantages(store, batch.keys).values()) == {0.0}


def test_corner_case_every_trajectory_failed_aborts_with_the_counts(store):
    for g in "ab":
        store.add_group(g, [0, 0, 0, 0], masked=[True] * N)
    with pytest.raises(TrainingAborted, match="8 of the last 8 rollouts"):
        h.make_buffer().sample(global_steps=1, partition_id="train", batch_size=2)
    # even with the budget off (max_failed_share=1) a step with nothing left to train on stops
    for g in "ab":
        store.add_group(g, [0, 0, 0, 0], masked=[True] * N)
    with pytest.raises(TrainingAborted, match="every trajectory of the step was left out"):
        h.make_buffer(agentgym={"max_failed_share": 1.0}).sample(global_steps=1, partition_id="train", batch_size=2)


def test_corner_case_every_group_failed_in_verl_aborts_once_replacements_are_spent(store):
    store.tags["train"]["a"] = {"is_prompt": True, "status": "failure", "global_steps": 1}
    asked = []

    def refill(n):
        asked.append(n)
        store.tags["train"][f"r{len(asked)}"] = {"is_prompt": True, "status": "failure", "global_steps": 1}
        return n

    with pytest.raises(TrainingAborted, match="only 0 of 1 groups"):
        h.make_buffer(refill_fn=refill).sample(global_steps=1, partition_id="train", batch_size=1)
    assert sum(asked) == 2


@pytest.mark.parametrize("rewards", [[1, 0, 0, 0], [0, 0, 0, 0]])
def test_corner_case_one_group_only_is_kept_as_it_is(store, rewards):
    store.add_group("a", rewards)
    batch, metrics = h.make_buffer(vspo={"max_extra_batches": 0}).sample(global_steps=1, partition_id="train",
                                                                        batch_size=1)
    assert groups_of(batch.keys) == ["a"] and metrics["vspo/copies"] == 0 and metrics["vspo/evicted_groups"] == 0


# -- recipe keys that do nothing under the V1 trainer ---------------------------------------------
_NO_OP_KEYS = ("actor_rollout_ref.rollout.multi_turn.enable", "data.return_raw_chat",
               "algorithm.norm_adv_by_std_in_grpo")


@pytest.mark.parametrize("recipe", ["_agentgym_base", "grpo", "planner_r1", "prs_vspo", "planner_r1_async",
                                    "prs_vspo_async", "planner_r1_separate_async"])
def test_recipes_set_no_key_the_v1_trainer_ignores(recipe):
    import yaml

    from agentgym.integrations.verl.train import recipe_dir

    with recipe_dir() as folder:
        text = yaml.safe_load((folder / f"{recipe}.yaml").read_text())

    def has(tree, dotted):
        for part in dotted.split("."):
            if not isinstance(tree, dict) or part not in tree:
                return False
            tree = tree[part]
        return True

    assert [k for k in _NO_OP_KEYS if has(text, k)] == []


# -- verl's global steps (1..N) map onto the stages' 0-based ranges ------------------------------
@pytest.mark.parametrize(("global_step", "reward"), [(1, 5.0), (100, 5.0), (101, 3.0), (400, 3.0), (401, 1.0),
                                                    (500, 1.0)])
def test_verls_step_numbers_follow_the_100_300_100_curriculum(tokenizer, global_step, reward):
    import gymnasium

    from agentgym.envs.travelplanner.scripted import gold_plan_actions

    rows = prepare_rows("TravelPlanner-v0", split="train", limit=1)
    query = gymnasium.make("TravelPlanner-v0", tasks="train").unwrapped.tasks[0]
    (submit,) = gold_plan_actions(query, tools=False)
    config = h.trainer_config(response_length=100_000, prompt_length=8192,
                              agentgym={"reward": "planner_r1/curriculum", "total_steps": 500})
    (out,) = h.run_rows(tokenizer, h.FakeServer(tokenizer, lambda rid, turn: submit), config, rows,
                        global_steps=global_step)
    assert out.reward_score == reward  # schema x (5 terms | 3 macro terms | pass)
