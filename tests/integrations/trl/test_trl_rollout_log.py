"""The TRL rollout's ``log_dir``: every rollout's record, appended as the trainer plays, which the reward lab
reads back and reshapes to the rewards the trainer was paid."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("trl")

import agentgym  # noqa: E402,F401
from agentgym.integrations.trl.train import build_run, load_recipe  # noqa: E402
from agentgym.rewards.lab import Rollouts, compare, shape_rollouts  # noqa: E402

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """Two TRL rollout calls (2 prompts x 4 generations each) from the trl_searchqa recipe, logged."""
    import torch

    torch.manual_seed(0)
    recipe = load_recipe("trl_searchqa", ["tasks.count=4"])
    out = tmp_path_factory.mktemp("trl")
    trainer, rollout = build_run(recipe, grpo={"output_dir": str(out / "run"), "per_device_train_batch_size": 8,
                                               "num_generations": 4, "max_steps": 1, "disable_tqdm": True})
    rollout.log_dir = out / "log"
    dataset = trainer.train_dataset
    paid = []
    for step, first in ((0, 0), (1, 2)):
        trainer.state.global_step = step
        paid += rollout([dataset[first + i // 4]["prompt"] for i in range(8)], trainer)["shaped_reward"]
    return rollout, out / "log", paid


def test_the_log_holds_every_rollout_grouped_as_trl_groups_them(logged):
    rollout, log, paid = logged
    rollouts = Rollouts.load(log)
    assert sorted(p.name for p in log.iterdir()) == ["rollouts-0.jsonl"]
    assert len(rollouts) == 16 and [len(v) for v in rollouts.groups().values()] == [4, 4, 4, 4]
    assert [(r.group, r.sample) for r in rollouts[:5]] == [("0-0", 0), ("0-0", 1), ("0-0", 2), ("0-0", 3), ("0-1", 0)]
    assert [r.training_step for r in rollouts] == [0] * 8 + [1] * 8
    assert all(r.prompt and r.env_id == "SearchQA-v0" and r.task_id and len(r.actions) == len(r.infos) for r in rollouts)
    assert [r.total for r in rollouts] == paid


def test_the_log_reshapes_to_the_rewards_paid_and_compares(logged):
    rollout, log, paid = logged
    rollouts = Rollouts.load(log)
    again = shape_rollouts(rollouts, rollout.reward)
    assert [b.total for b, p in zip(again, paid) if p is not None] == pytest.approx([p for p in paid if p is not None])
    comparison = compare(rollouts, [rollout.reward, "prs/short"], labels=["recipe", "prs/short"])
    assert comparison.groups == 4 and comparison.result("recipe").stats.rollouts == 16


def test_a_recipe_asks_for_the_log_with_rollout_log_dir(tmp_path):
    from agentgym.integrations.trl.train import _rollout

    recipe = load_recipe("trl_searchqa", ["tasks.count=2", f"rollout.log_dir={tmp_path / 'log'}"])
    assert recipe.rollout.log_dir == str(tmp_path / "log")
    assert _rollout(recipe, None).log_dir == tmp_path / "log"
    assert _rollout(load_recipe("trl_searchqa", ["tasks.count=2"]), None).log_dir is None
