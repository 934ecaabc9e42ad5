"""The verl loop's rollout records: with a dump folder configured, each trajectory's ``reward_extra_info``
carries its record, verl 0.9.1's own writer dumps it, and the reward lab reads the dump back and
reshapes every trajectory to the score the loop paid."""

from __future__ import annotations

import asyncio
import json

import gymnasium
import pytest

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

import verl_harness as h  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.envs.travelplanner.scripted import gold_plan_actions  # noqa: E402
from agentgym.integrations.verl import plugin  # noqa: E402,F401  (registers the loop)
from agentgym.integrations.verl.prepare import prepare_rows  # noqa: E402
from agentgym.rewards.lab import Rollouts, shape_rollouts  # noqa: E402
from agentgym.rewards.lab.readers import VERL_COLUMN  # noqa: E402


def run_groups(tokenizer, server, config, rows, n, step):
    """Each row ``n`` times, with the uid and session ids verl's V1 worker gives the loop."""
    sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}

    async def one(row, uid, session):
        loop = h.make_loop(tokenizer, server, config)
        return await loop.run(sampling, raw_prompt=row["prompt"], extra_info=row["extra_info"],
                              index=row["extra_info"]["index"], data_source=row["data_source"],
                              reward_model=row["reward_model"], agent_name=row["agent_name"], uid=uid,
                              session_id=session, global_steps=step)

    async def all_rows():
        return await asyncio.gather(*(one(row, f"uid-{i}", s) for i, row in enumerate(rows) for s in range(n)))

    return asyncio.run(all_rows())


@pytest.fixture(scope="module")
def rows():
    return prepare_rows("TravelPlanner-v0", split="train", limit=2)


def _script(rows):
    env = gymnasium.make("TravelPlanner-v0", tasks="train")
    gold = [gold_plan_actions(env.unwrapped.tasks[r["extra_info"]["task_index"]]) for r in rows]
    order = {}

    def script(request_id, turn):  # odd trajectories break their plan: the group's rewards differ
        k = order.setdefault(request_id, len(order))
        actions = list(gold[(k // 2) % len(gold)])
        if k % 2:
            actions[-1] = actions[-1].replace('"breakfast": "', '"breakfast": "Chez Nowhere, ', 1)
        return actions[turn] if turn < len(actions) else "GiveUp[out of actions]"

    return script


def test_a_verl_dump_of_the_loop_s_trajectories_reshapes_to_the_scores_paid(tmp_path, rows):
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    tokenizer = h.make_tokenizer()
    config = h.trainer_config(response_length=100_000, prompt_length=8192,
                              agentgym={"reward": "planner_r1/dense"})
    config.trainer.rollout_data_dir = str(tmp_path)
    outputs = run_groups(tokenizer, h.FakeServer(tokenizer, _script(rows)), config, rows, n=2, step=7)
    infos = [o.extra_fields["reward_extra_info"] for o in outputs]
    # as verl's _log_rollout_data hands them to its writer: one list per reward_extra_info key
    extra = {key: [info[key] for info in infos] for key in infos[0]}
    scores = [o.reward_score for o in outputs]
    RayPPOTrainer._write_generations(["prompt"] * len(outputs), ["response"] * len(outputs), [None] * len(outputs),
                                     scores, extra, str(tmp_path), 7)
    rollouts = Rollouts.load(tmp_path)
    assert [(r.group, r.sample) for r in rollouts] == [("uid-0", 0), ("uid-0", 1), ("uid-1", 0), ("uid-1", 1)]
    assert all(r.training_step == 7 and r.env_id == "TravelPlanner-v0" and r.task_id for r in rollouts)
    assert len(set(scores)) > 1
    assert [b.total for b in shape_rollouts(rollouts, "planner_r1/dense")] == pytest.approx(scores)
    env = gymnasium.make("TravelPlanner-v0", tasks="train")
    assert rollouts[0].prompt == env.reset(options={"task_index": rows[0]["extra_info"]["task_index"]})[0]


def test_without_a_dump_folder_the_loop_carries_no_record(rows):
    tokenizer = h.make_tokenizer()
    config = h.trainer_config(response_length=100_000, prompt_length=8192)
    (out,) = run_groups(tokenizer, h.FakeServer(tokenizer, _script(rows)), config, rows[:1], n=1, step=1)
    assert VERL_COLUMN not in out.extra_fields["reward_extra_info"]
    assert json.dumps(out.extra_fields["reward_extra_info"])  # still the fixed-key float dict
