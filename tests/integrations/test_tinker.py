"""The tinker-cookbook bridge, driven through the cookbook's own group rollout (``do_group_rollout``,
its rollout strategies, ``EnvFromMessageEnv`` and the ``role_colon`` renderer) with ``ScriptedSampler``
standing in for Tinker's sampling client (no Tinker API is reachable here)."""

from __future__ import annotations

import asyncio
import pickle

import pytest

pytest.importorskip("tinker_cookbook", reason="tinker-cookbook is not installed: make install-test")

from tinker_cookbook.completers import TinkerTokenCompleter  # noqa: E402
from tinker_cookbook.rl.rollout_strategy import MinViableGroup  # noqa: E402
from tinker_cookbook.rl.rollouts import do_group_rollout  # noqa: E402
from tinker_cookbook.tokenizer_utils import register_tokenizer  # noqa: E402

from agentgym.errors import EpisodeFailed  # noqa: E402
from agentgym.integrations.tinker import AgentGymDataset, AgentGymGroupBuilder, ScriptedSampler, byte_tokenizer  # noqa: E402

from scripted_episodes import AFTER_ACTION, REWARDS, dead_retriever, direct_total, replying, scripts  # noqa: E402

TOKENIZER = byte_tokenizer()
register_tokenizer("agentgym-test-bytes", lambda: TOKENIZER)


def replay(table: dict[str, list[str]], fallback: str = "GiveUp[no script]"):
    """A policy over role_colon prompts: the first ``User:`` turn picks the script, ``Assistant:`` turns count."""

    def policy(prompt: str) -> str:
        first = prompt.split("User: ", 1)[1].split("\n\nAssistant:", 1)[0]
        return replying(table, first, prompt.count("\n\nAssistant:") - 1, fallback)

    return policy


def builder(env_id: str, index: int, group_size: int, seed: int = 0, **fields) -> AgentGymGroupBuilder:
    return AgentGymGroupBuilder(env_id, start={"seed": seed, "options": {"task_index": index}}, reward=REWARDS[env_id],
                                group_size=group_size, model_name="agentgym-test-bytes", **fields)


def rollout(group_builder, policy, **kwargs):
    sampler = ScriptedSampler(policy, TOKENIZER)
    return asyncio.run(do_group_rollout(group_builder, TinkerTokenCompleter(sampler, max_tokens=4096), **kwargs)), \
        sampler


@pytest.mark.parametrize("env_id", ["SearchQA-v0", "TravelPlanner-v0"])
def test_the_gold_policy_earns_the_env_reward_in_the_cookbooks_group_rollout(env_id):
    table = scripts(env_id, 2)
    replies = list(table.values())[1]
    group, sampler = rollout(pickle.loads(pickle.dumps(builder(env_id, 1, group_size=2))), replay(table))
    total, terms = direct_total(env_id, replies, seed=0, index=1)
    assert group.get_total_rewards() == [total, total] and total > 0 and not group.rollout_errors
    for trajectory in group.trajectories_G:
        last = trajectory.transitions[-1]
        assert last.episode_done and trajectory.stop_reason == "completed"
        assert len(trajectory.transitions) == len(replies)
        assert last.metrics["outcome"] == 1.0 and {k: last.metrics[f"term/{k}"] for k in terms} == terms
        assert all(t.reward == 0.0 for t in trajectory.transitions[:-1])  # paid on the last step
    if env_id == "SearchQA-v0":  # the next prompt holds the cut action, not what the model wrote after it
        assert all(AFTER_ACTION not in p for p in sampler.prompts)


def test_a_group_starts_from_one_task_and_the_builder_pickles_as_plain_fields():
    table = scripts("SearchQA-v0", 3, seed=5)
    made = builder("SearchQA-v0", 2, group_size=4, seed=5)
    assert pickle.loads(pickle.dumps(made)) == made
    assert {type(v).__name__ for v in vars(made).values()} <= {"str", "int", "dict", "NoneType"}
    group, sampler = rollout(made, replay(table))
    firsts = {t.transitions[0].ob.to_ints().__repr__() for t in group.trajectories_G}
    assert len(group.trajectories_G) == 4 and len(firsts) == 1
    assert TOKENIZER.decode(group.trajectories_G[0].transitions[0].ob.to_ints()).split("User: ", 1)[1].startswith(
        list(table)[2][:200])


def test_a_failed_episode_is_a_rollout_error_left_out_of_the_group():
    calls = iter(range(100))

    def policy(prompt: str) -> str:  # the first member searches (the retriever is down), the others answer
        return "<search>capital</search>" if next(calls) == 0 else "<answer>unknown</answer>"

    made = builder("SearchQA-v0", 0, group_size=3, env_kwargs={"retriever": dead_retriever()})
    group, _ = rollout(made, policy, strategy=MinViableGroup(min_successful=2, max_retries=0))
    assert len(group.trajectories_G) == 2 and len(group.get_total_rewards()) == 2
    ((error),) = group.rollout_errors
    assert error.error_type == "EpisodeFailed" and error.error_message.startswith("retriever_unreachable")
    with pytest.raises(EpisodeFailed, match="retriever_unreachable"):  # the cookbook's default: FailFast
        rollout(made, lambda prompt: "<search>capital</search>")


def test_the_dataset_batches_one_builder_per_task():
    dataset = AgentGymDataset("SearchQA-v0", [{"seed": 0, "options": {"task_index": i}} for i in range(5)],
                              batch_size=2, group_size=3, model_name="agentgym-test-bytes", reward="prs/short")
    assert len(dataset) == 3 and [len(dataset.get_batch(i)) for i in range(3)] == [2, 2, 1]
    assert dataset.get_batch(2)[0].start == {"seed": 0, "options": {"task_index": 4}}
