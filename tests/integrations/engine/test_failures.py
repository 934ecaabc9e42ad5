"""Failed is not zero, on both trainers: a rollout that failed for a reason outside the model (a
retriever that drops connections, an env that raises) never enters a group baseline.

30% of the rollouts fail; the advantages of the others equal those of the same batch without the
failed rows, under verl's GRPO and agentgym's VSPO (through agentgym's replay buffers) and under
TRL's GRPO; counting the failures as zeros, as before, biases them. A 100% failure rate stops
training. Every member of a group plays the same task from the same reset (the resets themselves
are recorded: same seed and options, once per member)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("verl")

import failing_infra  # noqa: E402  (registers FlakySearchQA-v0)
import verl_harness as h  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from agentgym.errors import ConfigError, TrainingAborted  # noqa: E402
from agentgym.integrations.verl.prepare import prepare_rows  # noqa: E402

GROUPS, N = 4, 5
FAILS = {0: "drop", 3: "crash", 7: "drop", 10: "crash", 13: "drop", 17: "crash"}  # 6 of 20 trajectories


@pytest.fixture(scope="module")
def retriever():
    server = failing_infra.DroppingRetriever()
    yield server
    server.close()


@pytest.fixture(scope="module")
def tokenizer():
    return h.make_tokenizer()


def _rows(retriever, count=GROUPS):
    rows = prepare_rows("SearchQA-v0", split="train", limit=count, env_kwargs={"synthetic_size": "small"})
    for row in rows:
        kwargs = {**json.loads(row["extra_info"]["env_kwargs"]), "retriever": retriever.url}
        row["extra_info"] = {**row["extra_info"], "env_id": failing_infra.ENV_ID, "env_kwargs": json.dumps(kwargs)}
    return rows


class _Resets:
    """Records every reset a rollout makes (seed and options), in the order the resets happen."""

    def __init__(self):
        self.seen = []

    def __call__(self, task, clock, **kwargs):
        options = self.reset_options(task, clock, **kwargs)
        self.seen.append((task.env_id, task.seed, json.dumps(options, sort_keys=True)))
        return options

    def __enter__(self):
        from agentgym.integrations import rollouts

        self.reset_options, rollouts.reset_options = rollouts.reset_options, self
        return self

    def __exit__(self, *exc):
        from agentgym.integrations import rollouts

        rollouts.reset_options = self.reset_options


def _play_groups(tokenizer, rows, fails, resets=None):
    """Each row's group of N through the real agent loop over the vLLM stand-in; trajectory k (in
    the order the groups run) searches with ``drop`` (the retriever hangs up), ``crash`` (the env
    raises) or a plain query, then answers gold for even members and a wrong answer for odd ones.
    ``resets`` gets each group's recorded resets."""
    outputs, seen = [], [0]
    for row in rows:
        gold, members = row["reward_model"]["ground_truth"]["target"][0], {}

        def script(request_id, turn, gold=gold, members=members):
            if request_id not in members:
                members[request_id] = (len(members), fails.get(seen[0]))
                seen[0] += 1
            member, fail = members[request_id]
            if turn == 0:
                return f"<search> {fail or ''} Skei </search>"
            return f"<answer> {gold if member % 2 == 0 else 'nowhere'} </answer>"

        server = h.FakeServer(tokenizer, script)
        config = h.trainer_config(rollout_name="vllm", agentgym={"max_turns": 2})
        with _Resets() as recorded:
            outputs.append(h.run_rows(tokenizer, server, config, [row], n=N))
        if resets is not None:
            resets.append(recorded.seen)
    return outputs


@pytest.fixture(scope="module")
def verl_resets():
    return []


@pytest.fixture(scope="module")
def played(tokenizer, retriever, verl_resets):
    return _play_groups(tokenizer, _rows(retriever), FAILS, verl_resets)


def _failed(out):
    return out.extra_fields["reward_extra_info"]["failed"] == 1.0


def _store(monkeypatch, groups, *, keep=lambda out: True):
    store = h.patch_tq(monkeypatch)
    for g, outs in enumerate(groups):
        store.add_outputs(f"g{g}", outs)
        for session, out in enumerate(outs):
            if not keep(out):
                store.kv_clear(f"g{g}_{session}_0", "train")
    return store


def _advantages(store, keys, estimator):
    """Per trajectory key, the advantage verl's V1 trainer computes over exactly these keys."""
    import torch
    from verl.protocol import DataProto
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    from agentgym.integrations.verl import estimator as _vspo  # noqa: F401  (registers vspo)

    data = store.kv_batch_get(keys, "train", select_fields=["uid", "rm_scores", "response_mask"])
    width = max(len(r) for r in data["rm_scores"].unbind())
    pad = lambda rows: torch.stack([torch.nn.functional.pad(r, (0, width - len(r))) for r in rows.unbind()])  # noqa
    proto = DataProto.from_dict(tensors={"token_level_rewards": pad(data["rm_scores"]).float(),
                                         "response_mask": pad(data["response_mask"])},
                                non_tensors={"uid": np.array(list(data["uid"]), dtype=object)})
    config = OmegaConf.create({"vspo": {"clip": None}, "norm_adv_by_std_in_grpo": True})
    out = compute_advantage_for_multi_trajectories(proto, batch_keys=keys, adv_estimator=estimator, config=config)
    return {key: float(row.abs().max()) * float(np.sign(row.sum())) for key, row in zip(keys, out.batch["advantages"])}


def test_failures_are_typed_and_left_out_of_training(played):
    outs = [o for group in played for o in group]
    reasons = [o.extra_fields["agentgym"]["failure"] for o in outs if _failed(o)]
    assert sorted(reasons) == ["env_error"] * 3 + ["retriever_unreachable"] * 3
    assert all(o.extra_fields["reward_extra_info"]["masked"] == 1.0 and sum(o.response_mask) == 0
               for o in outs if _failed(o))
    assert all(sum(o.response_mask) > 0 for o in outs if not _failed(o))


@pytest.mark.parametrize(("buffer", "estimator"), [("AgentGymReplayBuffer", "grpo"), ("VSPOReplayBuffer", "vspo")])
def test_the_other_rows_advantages_are_those_of_the_batch_without_the_failed_rows(monkeypatch, played, buffer,
                                                                                   estimator):
    store = _store(monkeypatch, played)
    batch, metrics = h.make_buffer(buffer, agentgym={"max_failed_share": 0.5}).sample(1, "train", GROUPS)
    with_failures = _advantages(store, batch.keys, estimator)
    assert metrics["agentgym/failed/env_error"] == metrics["agentgym/failed/retriever_unreachable"] == 3 / 20

    store = _store(monkeypatch, played, keep=lambda out: not _failed(out))
    batch, _ = h.make_buffer(buffer, agentgym={"max_failed_share": 0.5}).sample(1, "train", GROUPS)
    without = _advantages(store, batch.keys, estimator)
    assert with_failures == pytest.approx(without) and len(without) >= 14


def test_control_failures_as_zeros_move_the_baseline(monkeypatch, played):
    """verl's own buffer keeps the failed rows (mask 0, reward 0): GRPO's group means then move."""
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    store = _store(monkeypatch, played)
    keys = sorted(store.rows["train"])
    zeros = _advantages(store, keys, "grpo")
    store = _store(monkeypatch, played, keep=lambda out: not _failed(out))
    without = _advantages(store, sorted(store.rows["train"]), "grpo")
    assert any(abs(zeros[k] - without[k]) > 0.05 for k in without)
    assert ReplayBuffer is not None  # the comparison is what verl's sync buffer would train on


def test_a_100_percent_failure_rate_stops_training(monkeypatch, tokenizer, retriever):
    played = _play_groups(tokenizer, _rows(retriever, 2), {k: "drop" for k in range(2 * N)})
    _store(monkeypatch, played)
    with pytest.raises(TrainingAborted, match=r"10 of the last 10 rollouts.*retriever_unreachable 10"):
        h.make_buffer("AgentGymReplayBuffer").sample(1, "train", 2)


def test_every_member_of_a_verl_group_plays_the_same_task(played, verl_resets):
    """Same task, same prompt, and one reset (seed and options) made once per member."""
    assert len(verl_resets) == len(played)
    for group, resets in zip(played, verl_resets):
        assert len({o.extra_fields["agentgym"]["task_id"] for o in group if not _failed(o)}) == 1
        assert len({tuple(o.prompt_ids) for o in group}) == 1
        assert len(resets) == N and len(set(resets)) == 1, resets


def test_a_verl_row_that_does_not_pin_its_task_is_refused(tokenizer, retriever):
    row = _rows(retriever, 1)[0]
    row["extra_info"] = {k: v for k, v in row["extra_info"].items() if k != "task_index"}
    (out,) = h.run_rows(tokenizer, h.FakeServer(tokenizer), h.trainer_config(), [row])
    assert out.extra_fields["agentgym"]["fatal"] and "pins its episode" in out.extra_fields["agentgym"]["fatal"]
    from agentgym.integrations.verl.config import EnvTask

    with pytest.raises(ConfigError, match="pins its episode"):
        EnvTask.from_extra_info(row["extra_info"])


# -- TRL ---------------------------------------------------------------------------------------------
pytest.importorskip("trl")


@pytest.fixture(scope="module")
def trl_run(tmp_path_factory, retriever):
    """The trl_searchqa recipe on FlakySearchQA-v0: every 4th env step raises, and the retriever (no
    retries) drops every 3rd request; 4 prompts x 4 generations, one batch through TRL's own
    ``_generate_and_score_completions``."""
    import torch

    from agentgym.envs.searchqa.retrievers import HttpRetriever
    from agentgym.integrations.trl.train import EnvPart, build_run, load_model, load_recipe, load_tokenizer

    torch.manual_seed(0)
    dropping = failing_infra.DroppingRetriever(drop_every=3)
    recipe = load_recipe("trl_searchqa", ["tasks.count=4"])
    tokenizer = load_tokenizer(recipe)
    model = load_model(recipe, tokenizer)  # learnt on the env's text before the infrastructure starts failing
    kwargs = {**recipe.env.kwargs, "retriever": HttpRetriever(dropping.url, retries=0), "crash_every": 4}
    recipe = recipe.model_copy(update={"env": EnvPart(id=failing_infra.ENV_ID, kwargs=kwargs)})
    failing_infra.FlakySearchQA.restart_count()
    trainer, rollout = build_run(recipe, tokenizer=tokenizer, model=model, max_failed_share=1.0,
                                 grpo={"output_dir": str(tmp_path_factory.mktemp("trl")), "max_steps": 1,
                                       "per_device_train_batch_size": 16, "num_generations": 4, "disable_tqdm": True})
    captured, resets = [], []
    play = trainer.rollout_func
    trainer.rollout_func = lambda prompts, t: captured.append(play(prompts, t)) or captured[-1]
    inputs = [trainer.train_dataset[i // 4] for i in range(16)]
    with pytest.MonkeyPatch.context() as patch:  # each rollout's reset, in the order of TRL's prompts
        from agentgym.integrations import rollouts
        from agentgym.integrations.trl import rollout as trl_rollout

        async def recorded(host, task, stream, result, **kwargs):
            options = rollouts.reset_options(task, kwargs["clock"])
            resets.append((task.env_id, task.seed, json.dumps(options, sort_keys=True)))
            return await rollouts.play_rollout(host, task, stream, result, **kwargs)

        patch.setattr(trl_rollout, "play_rollout", recorded)
        scored = trainer._generate_and_score_completions(inputs)
    yield trainer, captured[-1], scored, dropping, resets
    dropping.close()


def test_trl_gets_none_for_failed_rollouts_and_leaves_them_out_of_the_baseline(trl_run):
    import torch
    from trl.trainer.utils import nanstd

    _, output, scored, dropping, _ = trl_run
    rewards = output["shaped_reward"]
    left_out = [e["left_out"] for e in output["episode"]]
    assert "env_error" in left_out and 0 < left_out.count("retriever_unreachable") <= dropping.dropped
    assert all((r is None) == (reason is not None) for r, reason in zip(rewards, left_out))
    assert all(set(m) == {0} for m, reason in zip(output["env_mask"], left_out) if reason)
    grouped = torch.tensor([float("nan") if r is None else r for r in rewards]).view(-1, 4)
    mean, std = torch.nanmean(grouped, dim=1, keepdim=True), nanstd(grouped, dim=1).unsqueeze(1)
    expected = torch.nan_to_num((grouped - mean) / (std + 1e-4), nan=0.0).view(-1)  # without the failed rows
    assert torch.allclose(scored["advantages"].cpu(), expected, atol=1e-5)
    zeros = torch.nan_to_num(grouped, nan=0.0)  # the control: failures as zeros, as before
    biased = ((zeros - zeros.mean(1, keepdim=True)) / (zeros.std(1, keepdim=True) + 1e-4)).view(-1)
    survivors = torch.tensor([r is not None for r in rewards])
    assert not torch.allclose(biased[survivors], expected[survivors], atol=1e-3)


def test_every_member_of_a_trl_group_plays_the_same_task(trl_run):
    """TRL's groups are ``num_generations`` consecutive completions: each holds one task, one
    prompt, and one reset (seed and options), made once per member."""
    _, output, _, _, resets = trl_run
    assert len(resets) == len(output["episode"]) == 16
    for g in range(0, len(output["episode"]), 4):
        group = output["episode"][g:g + 4]
        assert len({e["task_id"] for e in group if e["task_id"]}) == 1
        assert len({tuple(p) for p in output["prompt_ids"][g:g + 4]}) == 1
        assert len(set(resets[g:g + 4])) == 1, resets[g:g + 4]
    assert len(set(resets)) == 4  # and the groups differ


def test_trl_task_dataset_pins_the_task_its_reset_drew():
    from agentgym.integrations.trl.rollout import TASK_KEY, task_dataset

    rows = task_dataset("SearchQA-v0", options=[{}, {}], env_kwargs={"synthetic_size": "small"})
    tasks = [json.loads(row["prompt"][0][TASK_KEY]) for row in rows]
    assert all(task["options"].get("task_id") for task in tasks)


def test_trl_stops_training_at_a_100_percent_failure_rate(tmp_path, retriever):
    from agentgym.integrations.trl.train import EnvPart, build_run, load_model, load_recipe, load_tokenizer

    recipe = load_recipe("trl_searchqa", ["tasks.count=2"])
    tokenizer = load_tokenizer(recipe)
    model = load_model(recipe, tokenizer)
    recipe = recipe.model_copy(update={"env": EnvPart(id=failing_infra.ENV_ID,
                                                      kwargs={**recipe.env.kwargs, "crash_every": 1})})
    trainer, _ = build_run(recipe, tokenizer=tokenizer, model=model, grpo={"output_dir": str(tmp_path), "max_steps": 2, "disable_tqdm": True,
                                         "per_device_train_batch_size": 8, "num_generations": 4})
    with pytest.raises(TrainingAborted, match=r"8 of the last 8 rollouts were left out of training \(env_error 8\)"):
        trainer.train()


def test_the_verl_buffer_logs_the_reward_labs_figures_of_its_groups(monkeypatch, played):
    """The live figures are the reward lab's own (``group_metrics``), over the step's groups as verl holds them."""
    from agentgym.rewards.lab import group_metrics

    _store(monkeypatch, played)
    _, metrics = h.make_buffer("AgentGymReplayBuffer", agentgym={"max_failed_share": 0.5}).sample(1, "train", GROUPS)
    rows = [(g, o.reward_score, o.extra_fields["reward_extra_info"]["outcome"],
             o.extra_fields["agentgym"]["breakdown"]) for g, group in enumerate(played) for o in group]
    expected = {k: v for k, v in group_metrics(rows).items() if v == v}
    assert expected and {k: metrics[k] for k in expected} == pytest.approx(expected)
    assert "agentgym/reward/zero_var" in metrics and "agentgym/reward/within_std" in metrics
