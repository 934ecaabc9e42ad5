"""The ``agentgym`` verl agent loop end to end on CPU: a real BPE tokenizer, a fake LLM server with
verl's ``generate`` signature, and TravelPlanner-v0 / SearchQA-v0 episodes."""

from __future__ import annotations

import gymnasium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

import verl_harness as h  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.envs.travelplanner.env import TravelPlannerEnv  # noqa: E402
from agentgym.envs.travelplanner.scripted import gold_plan_actions  # noqa: E402
from agentgym.integrations.verl import plugin  # noqa: E402,F401  (registers the loop, as verl's entry point does)
from agentgym.integrations.verl.envs import ENV_POOL  # noqa: E402
from agentgym.integrations.verl.prepare import prepare_rows  # noqa: E402
from agentgym.integrations.reward_info import reward_keys  # noqa: E402

DENSE_TERMS = ("schema", "commonsense_micro", "hard_micro", "commonsense_macro", "hard_macro", "final_pass")


@pytest.fixture(scope="module")
def tokenizer():
    return h.make_tokenizer()


@pytest.fixture(scope="module")
def tp_rows():
    return prepare_rows("TravelPlanner-v0", split="train", limit=3)


@pytest.fixture(scope="module")
def plans(tp_rows):
    env = gymnasium.make("TravelPlanner-v0", tasks="train")
    return [gold_plan_actions(env.unwrapped.tasks[r["extra_info"]["task_index"]]) for r in tp_rows]


def scripted(plans_by_turn):
    """A script replaying ``plans_by_turn`` (one action list, or one per request in arrival order)."""
    order: dict[str, int] = {}

    def script(request_id, turn):
        actions = plans_by_turn[order.setdefault(request_id, len(order)) % len(plans_by_turn)]
        return actions[turn] if turn < len(actions) else "GiveUp[out of actions]"

    return script


def test_reference_plan_episode_tokens_masks_and_reward(tokenizer, tp_rows, plans):
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    (out,) = h.run_rows(tokenizer, server, h.trainer_config(response_length=100_000, prompt_length=8192), tp_rows[:1])
    info = out.extra_fields["reward_extra_info"]
    assert out.reward_score == 1.0 and info["outcome"] == 1.0 and info["score"] == 1.0
    assert info["model_turns"] == len(plans[0]) == len(server.calls)
    assert info["truncated"] == 0.0 and info["env_failed"] == 0.0
    assert out.extra_fields["agentgym"]["stop_reason"] == "terminated"
    # num_turns as verl's ToolAgentLoop counts: the prompt, every model turn, every observation.
    assert out.num_turns == 1 + 2 * len(plans[0]) - 1
    model_tokens = [t for call in server.calls for t in call["output"]]
    assert sum(out.response_mask) == len(model_tokens)
    assert [t for t, m in zip(out.response_ids, out.response_mask) if m] == model_tokens
    assert len(out.response_logprobs) == len(out.response_ids)


def test_token_in_token_out_and_observation_tokens(tokenizer, tp_rows, plans):
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    (out,) = h.run_rows(tokenizer, server, h.trainer_config(response_length=100_000, prompt_length=8192), tp_rows[:1])
    stream = out.prompt_ids + out.response_ids
    # Every call's prompt is the previous prompt + the previous output + exactly one observation.
    env = gymnasium.make("TravelPlanner-v0", tasks="train")
    env.reset(options={"task_index": 0})
    for before, after in zip(server.calls, server.calls[1:]):
        grown = before["prompt_ids"] + before["output"]
        assert after["prompt_ids"][: len(grown)] == grown
        observation_ids = after["prompt_ids"][len(grown):]
        text = tokenizer.decode(observation_ids)
        expected, *_ = env.step(tokenizer.decode(before["output"], skip_special_tokens=True))
        # the template's own tokens: its newline after the model's <|im_end|>, then the message
        assert text == f"\n<|im_start|>user\n{expected}<|im_end|>\n<|im_start|>assistant\n"
    assert stream[: len(server.calls[-1]["prompt_ids"])] == server.calls[-1]["prompt_ids"]
    assert out.prompt_ids == server.calls[0]["prompt_ids"]
    assert out.prompt_ids == tokenizer.apply_chat_template(tp_rows[0]["prompt"], add_generation_prompt=True,
                                                           tokenize=True, return_dict=False)


def test_random_tokens_hit_max_turns_with_constant_keys(tokenizer, tp_rows):
    config = h.trainer_config(agentgym={"max_turns": 3, "reward": "planner_r1/dense"})
    broken = {**tp_rows[0], "extra_info": {**tp_rows[0]["extra_info"], "env_id": "NoSuchEnv-v9"}}
    outs = h.run_rows(tokenizer, h.FakeServer(tokenizer, seed=7), config, [*tp_rows[:2], broken], n=2, global_steps=5)
    assert all(list(o.extra_fields["reward_extra_info"]) == reward_keys(DENSE_TERMS) for o in outs)
    played, failed = outs[:4], outs[4:]
    assert all(o.extra_fields["reward_extra_info"]["model_turns"] == 3 for o in played)
    assert all(o.extra_fields["reward_extra_info"]["truncated"] == 1.0 for o in played)
    assert all(o.extra_fields["agentgym"]["stop_reason"] == "env_truncated" for o in played)
    assert all(o.extra_fields["reward_extra_info"]["outcome"] == 0.0 for o in played)
    assert all(o.extra_fields["reward_extra_info"]["env_failed"] == 1.0 for o in failed)


def test_reward_preset_terms_and_training_step(tokenizer, tp_rows, plans):
    config = h.trainer_config(response_length=100_000, agentgym={"reward": {"preset": "planner_r1/curriculum",
                                                                           "total_steps": 30}})
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    (early,) = h.run_rows(tokenizer, server, config, tp_rows[:1], global_steps=1)
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    (late,) = h.run_rows(tokenizer, server, config, tp_rows[:1], global_steps=29)
    info = early.extra_fields["reward_extra_info"]
    assert all(info[f"term/{t}"] == 1.0 for t in DENSE_TERMS)
    assert early.reward_score == 5.0  # dense stage: schema gate x five terms of weight 1, all satisfied
    assert late.reward_score == 1.0  # sparse stage: final pass only
    assert late.extra_fields["reward_extra_info"]["outcome"] == 1.0


def test_response_budget_stops_the_episode(tokenizer, tp_rows, plans):
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    config = h.trainer_config(response_length=300, agentgym={"unfinished_reward": -1.0})
    (out,) = h.run_rows(tokenizer, server, config, tp_rows[:1])
    assert len(out.response_ids) <= 300 and len(out.response_mask) == len(out.response_ids)
    assert out.extra_fields["agentgym"]["stop_reason"] == "response_length"
    assert out.reward_score == -1.0 and out.extra_fields["reward_extra_info"]["truncated"] == 1.0
    assert all(call["sampling_params"]["max_tokens"] <= 300 for call in server.calls)


def test_verl_max_assistant_turns_stops_the_loop(tokenizer, tp_rows, plans):
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    (out,) = h.run_rows(tokenizer, server, h.trainer_config(max_assistant_turns=2), tp_rows[:1])
    assert len(server.calls) == 2
    assert out.extra_fields["agentgym"]["stop_reason"] == "max_turns"
    assert out.reward_score == 0.0


class ExplodingTravelPlanner(TravelPlannerEnv):
    """Raises on the agent's second action."""

    def on_step(self, action):
        if self.turn >= 2:
            raise RuntimeError("database connection lost")
        return super().on_step(action)


gymnasium.register("AgentGymTest/ExplodingTravelPlanner-v0", entry_point=ExplodingTravelPlanner)


def test_env_error_fails_the_trajectory_not_the_worker(tokenizer, tp_rows, plans):
    row = {**tp_rows[0], "extra_info": {**tp_rows[0]["extra_info"], "env_id": "AgentGymTest/ExplodingTravelPlanner-v0"}}
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    outs = h.run_rows(tokenizer, server, h.trainer_config(), [row, tp_rows[1]])
    failed, fine = outs
    assert failed.extra_fields["reward_extra_info"]["env_failed"] == 1.0
    assert "database connection lost" in failed.extra_fields["agentgym"]["error"]
    assert failed.extra_fields["agentgym"]["stop_reason"] == "env_error"
    assert sum(failed.response_mask) == 0 and len(failed.response_ids) > 0
    assert failed.reward_score == 0.0
    assert fine.extra_fields["reward_extra_info"]["env_failed"] == 0.0
    assert list(failed.extra_fields["reward_extra_info"]) == list(fine.extra_fields["reward_extra_info"])


def test_env_error_can_fail_the_group_instead(tokenizer, tp_rows, plans):
    row = {**tp_rows[0], "extra_info": {**tp_rows[0]["extra_info"], "env_id": "AgentGymTest/ExplodingTravelPlanner-v0"}}
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    with pytest.raises(Exception, match="database connection lost"):
        h.run_rows(tokenizer, server, h.trainer_config(agentgym={"on_env_error": "raise"}), [row])


def test_unknown_env_id_is_a_failed_trajectory_with_its_reason(tokenizer, tp_rows):
    row = {**tp_rows[0], "extra_info": {**tp_rows[0]["extra_info"], "env_id": "NoSuchEnv-v9"}}
    (out,) = h.run_rows(tokenizer, h.FakeServer(tokenizer), h.trainer_config(), [row])
    assert out.extra_fields["reward_extra_info"]["env_failed"] == 1.0
    assert "NoSuchEnv-v9" in out.extra_fields["agentgym"]["error"]
    assert out.response_mask == [0] and out.prompt_ids


def test_a_trajectory_failed_before_any_generation_still_names_its_policy_version(tokenizer, tp_rows):
    # verl's V1 trainer reads min/max_global_steps of every trained trajectory as ints (staleness metrics);
    # with no generation the server never set them, and None stopped the trainer with a TypeError.
    row = {**tp_rows[0], "extra_info": {**tp_rows[0]["extra_info"], "env_id": "NoSuchEnv-v9"}}
    (out,) = h.run_rows(tokenizer, h.FakeServer(tokenizer), h.trainer_config(), [row], global_steps=3)
    assert out.extra_fields["min_global_steps"] == out.extra_fields["max_global_steps"] == 3


def test_envs_are_pooled_and_a_broken_env_is_not_reused(tokenizer, tp_rows, plans):
    from agentgym.integrations.verl.config import EnvTask

    ENV_POOL.clear()
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    h.run_rows(tokenizer, server, h.trainer_config(), tp_rows[:1], n=3)
    task = EnvTask.from_extra_info(tp_rows[0]["extra_info"])
    assert 1 <= ENV_POOL.idle_count(task) <= 3
    row = {**tp_rows[0], "extra_info": {**tp_rows[0]["extra_info"], "env_id": "AgentGymTest/ExplodingTravelPlanner-v0"}}
    h.run_rows(tokenizer, h.FakeServer(tokenizer, scripted([plans[0]])), h.trainer_config(), [row])
    assert ENV_POOL.idle_count(EnvTask.from_extra_info(row["extra_info"])) == 0


def test_searchqa_episode(tokenizer):
    rows = prepare_rows("SearchQA-v0", split="train", limit=2, env_kwargs={"synthetic_size": "small"})
    env = gymnasium.make("SearchQA-v0", tasks="train", synthetic_size="small")
    env.reset(options={"task_index": 0})
    gold = env.unwrapped.task.golden_answers[0]
    assert rows[0]["reward_model"]["ground_truth"] == {"target": list(env.unwrapped.task.golden_answers)}
    replies = [f"<search> {env.unwrapped.task.text} </search>", f"<answer> {gold} </answer>"]
    server = h.FakeServer(tokenizer, lambda rid, turn: replies[turn])
    (out,) = h.run_rows(tokenizer, server, h.trainer_config(), rows[:1])
    info = out.extra_fields["reward_extra_info"]
    assert out.reward_score == 1.0 and info["outcome"] == 1.0 and info["model_turns"] == 2
    observation = tokenizer.decode(server.calls[1]["prompt_ids"][len(server.calls[0]["prompt_ids"]) +
                                                                 len(server.calls[0]["output"]):])
    assert "<information>" in observation and observation.startswith("\n<|im_start|>user\n")


def test_remote_env_on_an_env_server(tokenizer, tp_rows, plans):
    pytest.importorskip("uvicorn")
    from agentgym.server import ServerConfig, create_app
    from agentgym.server.live_server import LiveServer

    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    with LiveServer(create_app(ServerConfig(tokens=("t0k",)))) as live:
        config = h.trainer_config(response_length=100_000, prompt_length=8192,
                                  agentgym={"remote_url": live.url, "remote_token": "t0k",
                                            "reward": "planner_r1/dense"})
        (out,) = h.run_rows(tokenizer, server, config, tp_rows[:1])
        ENV_POOL.clear()  # close the pooled sessions while the server is up
    info = out.extra_fields["reward_extra_info"]
    assert out.extra_fields["agentgym"]["error"] is None
    assert out.reward_score == 5.0 and info["outcome"] == 1.0 and info["term/final_pass"] == 1.0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(response_length=st.integers(min_value=8, max_value=3000), turn_tokens=st.integers(min_value=1, max_value=60),
       max_turns=st.integers(min_value=1, max_value=6), seed=st.integers(min_value=0, max_value=2**16))
def test_random_episodes_keep_masks_aligned_and_within_budget(tokenizer, tp_rows, response_length, turn_tokens,
                                                              max_turns, seed):
    server = h.FakeServer(tokenizer, seed=seed, random_length=turn_tokens)
    config = h.trainer_config(response_length=response_length, agentgym={"max_turns": max_turns})
    (out,) = h.run_rows(tokenizer, server, config, tp_rows[:1])
    assert 1 <= len(out.response_ids) <= response_length
    assert len(out.response_mask) == len(out.response_ids) == len(out.response_logprobs)
    model_tokens = [t for call in server.calls for t in call["output"]]
    assert [t for t, m in zip(out.response_ids, out.response_mask) if m] == model_tokens[: sum(out.response_mask)]
    info = out.extra_fields["reward_extra_info"]
    assert info["model_turns"] == len(server.calls) <= max_turns
    assert out.extra_fields["agentgym"]["stop_reason"] in ("env_truncated", "response_length")


def test_searchqa_prs_reward_pays_for_the_right_answer(tokenizer):
    rows = prepare_rows("SearchQA-v0", split="train", limit=1, env_kwargs={"synthetic_size": "small"})
    env = gymnasium.make("SearchQA-v0", tasks="train", synthetic_size="small")
    env.reset(options={"task_index": 0})
    question = env.unwrapped.task
    scores = {}
    for answer in (question.golden_answers[0], "certainly not the answer"):
        replies = [f"<search> {question.text} </search>", f"<answer> {answer} </answer>"]
        server = h.FakeServer(tokenizer, lambda rid, turn, replies=replies: replies[turn])
        (out,) = h.run_rows(tokenizer, server, h.trainer_config(agentgym={"reward": "prs/short"}), rows)
        assert out.extra_fields["reward_extra_info"]["term/format"] == 1.0
        scores[answer] = out.reward_score
    assert scores[question.golden_answers[0]] == pytest.approx(1.0)
    assert scores["certainly not the answer"] < 0.5


def test_an_answer_inside_think_does_not_end_a_travelplanner_episode():
    """The real Qwen2.5-style template and a tokenizer built here, Qwen's Continuous Token builder
    (hf_model_type qwen2): the model muses about an <answer> inside <think>, then calls a tool."""
    from agentgym.integrations.verl.preflight.selftest import QWEN25_TEMPLATE, SPECIALS
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rows = prepare_rows("TravelPlanner-v0", split="train", limit=1, env_kwargs={"action_format": "json"})
    musing = "<think>maybe <answer>[]</answer> now?</think>"
    tool = '<tool_call>{"name": "search_cities", "arguments": {"state": "Texas"}}</tool_call>'
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer, bpe.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    bpe.train_from_iterator([musing, tool, rows[0]["prompt"][0]["content"]] * 5, trainer=trainers.BpeTrainer(
        vocab_size=800, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = QWEN25_TEMPLATE
    server = h.FakeServer(tok, lambda rid, turn: musing + tool + " <information>made up</information>"
                          if turn == 0 else None)
    config = h.trainer_config(response_length=4000, prompt_length=8192, agentgym={"max_turns": 2})
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset
    import asyncio

    async def play():
        loop = hydra.utils.instantiate(_agent_loop_registry["agentgym"], trainer_config=DictConfigWrap(config),
                                       server_manager=server, tokenizer=tok, processor=None, hf_model_type="qwen2",
                                       dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
                                       tools=ToolListWrap([]))
        assert type(loop.continuous_token_builder).__name__ == "QwenContinuousTokenBuilder"
        row = rows[0]
        return await loop.run({"temperature": 1.0}, raw_prompt=row["prompt"], extra_info=row["extra_info"])

    out = asyncio.run(play())
    info = out.extra_fields["reward_extra_info"]
    assert info["model_turns"] == 2  # the <answer> inside <think> did not end the episode: a second turn ran
    trained = tok.decode([t for t, m in zip(out.response_ids, out.response_mask) if m])
    assert "made up" not in trained and trained.count("</tool_call>") == 1  # cut after the first action


def test_the_loop_needs_none_of_verls_continuous_token_merge_helpers(tokenizer, tp_rows, plans, monkeypatch):
    """The loop lays tokens out by agentgym's one chat rule: verl's merge helpers (renamed between 0.9.1 and
    its main branch, PR #6804) can go without the loop noticing."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase

    for name in ("ct_merge_context_msg", "ct_merge_non_assistant_msg", "ct_merge_assistant_token"):
        monkeypatch.delattr(AgentLoopBase, name, raising=False)
    server = h.FakeServer(tokenizer, scripted([plans[0]]))
    (out,) = h.run_rows(tokenizer, server, h.trainer_config(response_length=100_000, prompt_length=8192), tp_rows[:1])
    assert out.extra_fields["agentgym"]["stop_reason"] == "terminated" and out.reward_score == 1.0
    assert sum(out.response_mask) == sum(len(call["output"]) for call in server.calls)


def test_num_turns_counts_as_verls_tool_agent_loop_does(tokenizer):
    """Defect: the loop counted chat messages, a system prompt included. verl's ToolAgentLoop counts the
    prompt once, then every model turn and every observation."""
    row = prepare_rows("SearchQA-v0", split="train", limit=1, env_kwargs={"synthetic_size": "small"})[0]
    row = {**row, "prompt": [{"role": "system", "content": "Be brief."}, *row["prompt"]]}
    replies = ["<search> Skei </search>", "<search> Skei city </search>", "<answer> x </answer>"]
    server = h.FakeServer(tokenizer, lambda rid, turn: replies[turn])
    (out,) = h.run_rows(tokenizer, server, h.trainer_config(rollout_name="vllm"), [row])
    assert out.num_turns == 1 + 3 + 2 and out.extra_fields["reward_extra_info"]["model_turns"] == 3
    assert "num_turns" not in out.extra_fields["reward_extra_info"]  # one meaning per name in one output


def test_max_user_turns_ends_the_episode_as_verls_tool_agent_loop_does(tokenizer):
    """Defect: verl's multi_turn.max_user_turns was silently ignored. With 1, one observation, then the
    model's next turn is its last."""
    row = prepare_rows("SearchQA-v0", split="train", limit=1, env_kwargs={"synthetic_size": "small"})[0]
    server = h.FakeServer(tokenizer, lambda rid, turn: "<search> Skei </search>")
    (out,) = h.run_rows(tokenizer, server, h.trainer_config(rollout_name="vllm", max_user_turns=1), [row])
    assert out.extra_fields["agentgym"]["stop_reason"] == "max_observations" and len(server.calls) == 2


def test_full_determinism_gives_verls_request_ids(tokenizer):
    """Defect: rollout.full_determinism was ignored; verl's loops then route each request by ``det-<priority>``."""
    row = prepare_rows("SearchQA-v0", split="train", limit=1, env_kwargs={"synthetic_size": "small"})[0]
    server = h.FakeServer(tokenizer, lambda rid, turn: "<answer> x </answer>")
    h.run_rows(tokenizer, server, h.trainer_config(rollout_name="vllm", full_determinism=True), [row], n=3)
    assert sorted(call["request_id"] for call in server.calls) == ["det-0", "det-1", "det-2"]
    server = h.FakeServer(tokenizer, lambda rid, turn: "<answer> x </answer>")
    h.run_rows(tokenizer, server, h.trainer_config(rollout_name="vllm"), [row], n=2)
    assert not any(call["request_id"].startswith("det-") for call in server.calls)