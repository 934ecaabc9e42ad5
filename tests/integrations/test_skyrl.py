"""The skyrl-gym bridge through skyrl-gym 0.4.0's own interface: its registry and ``make`` (what
SkyRL's generator calls, with an OmegaConf env config and a dataset row's extra columns), ``init``,
``step``, ``get_metrics`` and ``aggregate_metrics``, played the way the generator's agent loop plays
an env. (The generator itself, in the ``skyrl`` distribution, is not installed: see docs/skyrl.md.)"""

from __future__ import annotations

import json

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="skyrl-gym is not installed: make install-test")

from omegaconf import OmegaConf  # noqa: E402

from agentgym.errors import EpisodeFailed  # noqa: E402
from agentgym.integrations.skyrl import ENV_CLASS, TASK_KEY, AgentGymTextEnv, task_rows  # noqa: E402

from scripted_episodes import AFTER_ACTION, REWARDS, dead_retriever, direct_total, scripts  # noqa: E402


def make(env_id: str, row: dict, *, max_turns: int = 30, **config):
    """``skyrl_gym.make`` as SkyRL's generator calls it: the row's columns other than prompt and
    env_class are the extras, ``max_turns`` the generator's."""
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env_config = OmegaConf.create({"env_id": env_id, "reward": REWARDS[env_id], **config})
    return skyrl_gym.make(row["env_class"], env_config=env_config, extras={**extras, "max_turns": max_turns})


def play(env, prompt, replies):
    """The generator's loop: init, then a reply per turn until done, keeping the cut action."""
    chat, _ = env.init(prompt)
    outputs = []
    for reply in replies:
        out = env.step(reply)
        outputs.append(out)
        chat += [{"role": "assistant", "content": out["postprocessed_action"] or reply}, *out["observations"]]
        if out["done"]:
            break
    return chat, outputs


@pytest.mark.parametrize("env_id", ["SearchQA-v0", "TravelPlanner-v0"])
def test_the_gold_policy_earns_the_env_reward(env_id):
    table = scripts(env_id, 2)
    rows = task_rows(env_id, [{"seed": 0, "options": {"task_index": i}} for i in range(2)])
    assert [row["prompt"][0]["content"] for row in rows] == list(table)  # agentgym's own prompt
    env = make(env_id, rows[1])
    assert isinstance(env, AgentGymTextEnv)
    replies = list(table.values())[1]
    chat, outputs = play(env, rows[1]["prompt"], replies)
    total, terms = direct_total(env_id, replies, seed=0, index=1)
    assert chat[0] == rows[1]["prompt"][0] and outputs[-1]["done"] and outputs[-1]["reward"] == total > 0
    assert all(out["reward"] == 0.0 for out in outputs[:-1]) and len(outputs) == len(replies)
    metrics = env.get_metrics()
    assert metrics["outcome"] == 1.0 and {k: metrics[f"term/{k}"] for k in terms} == terms
    assert AgentGymTextEnv.aggregate_metrics([metrics, metrics])["outcome"] == 1.0
    if env_id == "SearchQA-v0":
        assert AFTER_ACTION not in outputs[0]["postprocessed_action"]


def test_rows_of_one_task_start_the_same():
    (row,) = task_rows("SearchQA-v0", [{"seed": 3, "options": {"task_index": 4}}])
    assert row["env_class"] == ENV_CLASS and json.loads(row[TASK_KEY]) == {"seed": 3, "options": {"task_index": 4}}
    firsts = {make("SearchQA-v0", row).init(row["prompt"])[0][0]["content"] for _ in range(3)}
    assert firsts == {row["prompt"][0]["content"]}


def test_the_generators_max_turns_ends_the_episode_unpaid():
    (row,) = task_rows("SearchQA-v0", [{"seed": 0, "options": {"task_index": 0}}])
    _, outputs = play(make("SearchQA-v0", row, max_turns=2), row["prompt"], ["<search>a</search>"] * 5)
    assert len(outputs) == 2 and outputs[-1]["done"] and outputs[-1]["reward"] == 0.0
    assert outputs[-1]["metadata"]["stop_reason"] == "max_turns"


def test_a_failed_episode_raises_instead_of_paying_zero():
    (row,) = task_rows("SearchQA-v0", [{"seed": 0, "options": {"task_index": 0}}])
    env = make("SearchQA-v0", row, env_kwargs={"retriever": dead_retriever()})
    env.init(row["prompt"])
    with pytest.raises(EpisodeFailed, match="retriever_unreachable") as caught:
        env.step("<search>capital</search>")
    assert caught.value.failure.reason == "retriever_unreachable"
