"""The ``vspo`` advantage estimator through verl's own registry and ``compute_advantage``:
GRPO advantages, copies attenuated by 1/(1+k), clipping, failed rows left out."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

from agentgym.integrations.verl.vspo import copy_uid  # noqa: E402




def advantages(scores, uids, vspo=None, mask_rows=()):
    import torch
    from omegaconf import OmegaConf
    from verl.protocol import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    import agentgym.integrations.verl.plugin  # noqa: F401  (registers "vspo", as verl's entry point does)

    length = 4
    rewards = torch.zeros(len(scores), length)
    rewards[:, -1] = torch.tensor(scores, dtype=torch.float32)
    mask = torch.ones(len(scores), length)
    for row in mask_rows:
        mask[row] = 0
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": np.array(uids, dtype=object)})
    config = OmegaConf.create({"adv_estimator": "vspo", **({"vspo": vspo} if vspo is not None else {})})
    out = compute_advantage(data, adv_estimator="vspo", config=config)
    return out.batch["advantages"][:, 0].tolist(), out.batch["advantages"]


def test_vspo_estimator_is_registered_in_verl():
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    import agentgym.integrations.verl.plugin  # noqa: F401

    assert get_adv_estimator_fn("vspo").__name__ == "compute_vspo_advantage"


def test_copies_are_attenuated_by_one_over_one_plus_k():
    uids = ["a", "a", copy_uid("a", 1), copy_uid("a", 1), copy_uid("a", 2), copy_uid("a", 2)]
    values, _ = advantages([1, 0, 1, 0, 1, 0], uids)
    grpo = 0.5 / math.sqrt(0.5)  # (1 - .5) / unbiased std of {1, 0}
    assert values == pytest.approx([grpo, -grpo, grpo / 2, -grpo / 2, grpo / 3, -grpo / 3], abs=1e-5)


def test_advantages_are_clipped():
    scores = [1, 0, 0, 0, 0, 0, 0, 0]  # one success in 8: GRPO gives (1 - 1/8) / std = 2.47
    values, _ = advantages(scores, ["g"] * 8, vspo={"clip": 2.0})
    assert values[0] == pytest.approx(2.0) and values[1] == pytest.approx(-0.125 / np.std(scores, ddof=1), abs=1e-5)
    unclipped, _ = advantages(scores, ["g"] * 8, vspo={"clip": None})
    assert unclipped[0] == pytest.approx(0.875 / np.std(scores, ddof=1), abs=1e-5)


def test_zero_variance_group_has_zero_advantage_and_failed_rows_are_left_out():
    values, full = advantages([1, 1, 1, 0, 0], ["z", "z", "f", "f", "f"], mask_rows=(2,))
    assert values[:2] == [0.0, 0.0]
    assert values[2] == 0.0  # the failed row: masked, and not in its group's statistics
    assert values[3:] == [0.0, 0.0]  # the rest of the group ({0, 0}) has no spread left
    assert float(full[2].abs().sum()) == 0.0


def test_dr_grpo_option_skips_the_std_division():
    values, _ = advantages([1, 0, 0, 0], ["g"] * 4, vspo={"norm_by_std": False, "clip": None})
    assert values == pytest.approx([0.75, -0.25, -0.25, -0.25])


def test_vspo_settings_is_the_deprecated_spelling_of_vspo_config():
    from omegaconf import OmegaConf

    from agentgym._deprecated import AgentGymDeprecationWarning
    from agentgym.integrations.verl import estimator

    algorithm = OmegaConf.create({"vspo": {"clip": 2.0}})
    with pytest.warns(AgentGymDeprecationWarning, match="vspo_config"):
        old = estimator.vspo_settings
    assert old is estimator.vspo_config and old(algorithm).clip == 2.0
