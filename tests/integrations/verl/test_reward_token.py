"""The reward lands on a token the model produced, so every verl estimator sees it.

verl writes ``reward_score`` on the last response token (``AgentLoopOutput.as_dict``). A turn that
stops at a stop string comes back from vLLM with no end-of-turn token; the loop used to close it
with one at loss mask 0, and the reward sat on that untrained token: GRPO and RLOO sum the row and
do not notice, GAE and REINFORCE++ gave a reward-1 and a reward-0 trajectory the same advantages.
"""

from __future__ import annotations

import pytest

pytest.importorskip("verl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import verl_harness as h  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from agentgym.integrations.verl.prepare import prepare_rows  # noqa: E402

ESTIMATORS = ["gae", "reinforce_plus_plus", "grpo", "rloo"]


@pytest.fixture(scope="module")
def group():
    """One group of two SearchQA trajectories through the real agent loop over the vLLM stand-in: a
    search, then an answer cut at its stop string: the gold answer (reward 1) and a wrong one (reward 0)."""
    tokenizer = h.make_tokenizer()
    row = prepare_rows("SearchQA-v0", split="train", limit=1, env_kwargs={"synthetic_size": "small"})[0]
    gold = row["reward_model"]["ground_truth"]["target"][0]
    order: dict[str, int] = {}

    def script(request_id, turn):
        member = order.setdefault(request_id, len(order))
        answer = gold if member == 0 else "nowhere"
        return ["<search> Skei </search>", f"<answer> {answer} </answer> more text"][turn]

    server = h.FakeServer(tokenizer, script)
    config = h.trainer_config(rollout_name="vllm", agentgym={"max_turns": 2})
    outs = h.run_rows(tokenizer, server, config, [row], n=2)
    return sorted(outs, key=lambda out: -out.reward_score)


def _rows(outputs):
    """verl's own conversion of the outputs (``AgentLoopOutput.as_dict``: ``rm_scores`` on the last
    response token), right-padded into one batch of one group."""
    from verl.protocol import DataProto

    dicts = [out.as_dict() for out in outputs]
    width = max(len(d["responses"]) for d in dicts)

    def pad(key, dtype):
        return torch.stack([torch.nn.functional.pad(d[key].to(dtype), (0, width - len(d[key]))) for d in dicts])

    mask = pad("response_mask", torch.int64)
    return DataProto.from_dict(
        tensors={"token_level_rewards": pad("rm_scores", torch.float32), "response_mask": mask,
                 "values": torch.zeros(mask.shape, dtype=torch.float32)},
        non_tensors={"uid": np.array(["g"] * len(dicts), dtype=object)})


def _advantages(data, estimator):
    from verl.trainer.ppo.ray_trainer import compute_advantage

    config = OmegaConf.create({"gamma": 1.0, "lam": 1.0, "use_pf_ppo": False, "norm_adv_by_std_in_grpo": True})
    out = compute_advantage(data, adv_estimator=estimator, gamma=1.0, lam=1.0, config=config)
    mask = data.batch["response_mask"].bool()
    return [out.batch["advantages"][i][mask[i]] for i in range(len(data))]


def test_the_episode_ends_on_a_sampled_token(group):
    assert [out.reward_score for out in group] == [1.0, 0.0]
    for out in group:
        assert out.response_mask[-1] == 1  # the closing </answer> is the model's, and the last token
        assert out.as_dict()["rm_scores"][-1] == out.reward_score


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_a_reward_1_and_a_reward_0_trajectory_get_different_advantages(group, estimator):
    good, bad = _advantages(_rows(group), estimator)
    assert not torch.allclose(good.mean(), bad.mean()), (estimator, good, bad)


@pytest.mark.parametrize("estimator", ["gae", "reinforce_plus_plus"])
def test_control_the_reward_on_an_added_mask_0_token_is_lost_to_per_token_estimators(group, estimator):
    """What the loop did before: a mask-0 end-of-turn token after the last stop string, the reward on it.
    The per-token estimators then cannot tell the two trajectories apart, which the test above catches."""
    closed = [out.model_copy(update={"response_ids": [*out.response_ids, 2], "response_mask": [*out.response_mask, 0],
                                     "response_logprobs": [*(out.response_logprobs or []), 0.0] or None})
              for out in group]
    good, bad = _advantages(_rows(closed), estimator)
    assert torch.allclose(good.mean(), bad.mean()) and torch.allclose(good, torch.zeros_like(good))
