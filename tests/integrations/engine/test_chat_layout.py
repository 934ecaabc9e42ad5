"""One chat layout for both trainers: between a model turn and the next observation, the template's
own tokens, by TRL's rule; the same episode gives the same tokens and masks under verl and TRL."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

pytest.importorskip("verl")
pytest.importorskip("trl")

import verl_harness as h  # noqa: E402

from agentgym.integrations.chat_layout import ChatLayout, end_of_turn_ids  # noqa: E402
from agentgym.integrations.rollouts import Clock  # noqa: E402
from agentgym.integrations.trl.rollout import AgentGymRollout  # noqa: E402
from agentgym.integrations.turns import TurnRules  # noqa: E402
from agentgym.integrations.verl.prepare import prepare_rows  # noqa: E402

OBS = "<information>Doc 1(Title: Paris) capital of France</information>"
FAMILIES = ["chatml", "llama3"]


@pytest.fixture(scope="module", params=FAMILIES)
def tokenizer(request):
    return h.make_tokenizer(request.param)


def test_chatml_observations_start_with_the_templates_newline():
    """Defect: after a turn that ends <|im_end|>, TRL's rollout appended <|im_start|>user, where the
    template (and verl's Qwen builder, and TRL's own tool loop) writes <|im_end|>\\n<|im_start|>user."""
    tokenizer = h.make_tokenizer("chatml")
    text = tokenizer.decode(ChatLayout(tokenizer).observation_ids(OBS))
    assert text == f"\n<|im_start|>user\n{OBS}<|im_end|>\n<|im_start|>assistant\n"


def test_a_stream_is_the_templates_rendering_of_the_whole_chat(tokenizer):
    layout = ChatLayout(tokenizer)
    chat = [{"role": "user", "content": "Where is Skei?"}, {"role": "assistant", "content": "<search> Skei </search>"},
            {"role": "user", "content": OBS}]
    turn = tokenizer.encode(chat[1]["content"], add_special_tokens=False)
    stream = layout.prompt_ids(chat[:1]) + turn + [layout.end_of_turn] + layout.observation_ids(OBS)
    assert stream == layout.render(chat, add_generation_prompt=True)
    assert layout.end_of_turn == tokenizer.eos_token_id


def test_the_rule_is_trls_own_for_tool_results(tokenizer):
    """TRL's ``GRPOTrainer._get_tool_suffix_ids`` (its tool loop's rule), run on this tokenizer, gives the
    same tokens for a tool message."""
    from trl import GRPOTrainer

    trainer = SimpleNamespace(processing_class=tokenizer, _tokenizer=tokenizer, chat_template=None, _is_vlm=False,
                              chat_template_kwargs={})
    expected = GRPOTrainer._get_tool_suffix_ids(trainer, [{"role": "tool", "name": "search", "content": OBS}])
    assert ChatLayout(tokenizer, observation_role="tool").observation_ids(OBS) == expected


def test_the_rule_is_verls_qwen_builder_on_chatml():
    """verl's ``QwenContinuousTokenBuilder`` (what verl's own loops get on Qwen) appends the same tokens."""
    from verl.utils.tokenizer.continuous_token import QwenContinuousTokenBuilder

    tokenizer = h.make_tokenizer("chatml")
    layout = ChatLayout(tokenizer)
    before = [{"role": "user", "content": "Where is Skei?"}]
    prefix = layout.prompt_ids(before) + tokenizer.encode("<search> Skei </search>", add_special_tokens=False)
    prefix.append(tokenizer.eos_token_id)  # the model ended its turn
    after = [*before, {"role": "assistant", "content": "<search> Skei </search>"}, {"role": "user", "content": OBS}]
    merged = QwenContinuousTokenBuilder(tokenizer).merge_context_tokens(after[:2], after, prefix).token_ids
    assert merged == prefix + layout.observation_ids(OBS)


def test_every_end_of_turn_id_the_model_lists_ends_a_turn():
    """Qwen2.5-Instruct's generation config lists <|im_end|> and <|endoftext|>: both end a turn."""
    tokenizer = h.make_tokenizer("chatml")
    other = tokenizer.convert_tokens_to_ids("<|pad|>")
    assert end_of_turn_ids(tokenizer, [tokenizer.eos_token_id, other]) == (tokenizer.eos_token_id, other)
    layout = ChatLayout(tokenizer, generation_eos=[tokenizer.eos_token_id, other])
    assert layout.ends_turn([5, other]) and layout.ends_turn([5, tokenizer.eos_token_id]) and not layout.ends_turn([5])


# -- the same episode under verl and TRL -------------------------------------------------------------
def _script(gold):
    """A search cut at its stop string, a reply with no tags (EOS-ended), then an answer cut at its stop."""
    return ["<search> capital Skei </search> <information>made up", "I am not sure yet.",
            f"<answer> {gold} </answer> and then some"]


def _verl_stream(tokenizer, row, replies):
    server = h.FakeServer(tokenizer, lambda rid, turn: replies[turn])
    config = h.trainer_config(rollout_name="vllm", agentgym={"max_turns": len(replies)})
    (out,) = h.run_rows(tokenizer, server, config, [row])
    return out.prompt_ids, out.response_ids, out.response_mask


def _trl_stream(tokenizer, row, replies):
    """TRL's rollout over a sampler that answers as the verl stand-in does (vLLM's stop-string ends)."""
    import json

    from agentgym.integrations.trl._sampler import TurnSampler

    class Scripted(TurnSampler):
        def __init__(self):
            self.tokenizer, self.live, self._pending, self.turn = tokenizer, 1, [], 0

        async def sample(self, prefix, max_tokens, stops):
            ids = h._as_vllm_ends(tokenizer, replies[self.turn], {"stop": list(stops)})[:max_tokens]
            self.turn += 1
            return ids, [-0.5] * len(ids)

    info = row["extra_info"]
    rollout = AgentGymRollout(info["env_id"], env_kwargs=json.loads(info["env_kwargs"]), max_turns=len(replies))
    layout = ChatLayout(tokenizer)
    rules = TurnRules(response_length=4096, stop_ids=layout.stop_ids, end_of_turn=layout.end_of_turn,
                      max_turns=len(replies))
    episode, _ = asyncio.run(rollout._play(Scripted(), layout, rules, rollout._task(
        {"options": {"task_index": info["task_index"]}}), Clock()))
    out = rollout._output([(episode, _)], None, layout)
    return out["prompt_ids"][0], out["completion_ids"][0], out["env_mask"][0]


def test_trl_and_verl_lay_out_the_same_episode_byte_for_byte(tokenizer):
    row = prepare_rows("SearchQA-v0", split="train", limit=1, env_kwargs={"synthetic_size": "small"})[0]
    replies = _script(row["reward_model"]["ground_truth"]["target"][0])
    verl_prompt, verl_response, verl_mask = _verl_stream(tokenizer, row, replies)
    trl_prompt, trl_response, trl_mask = _trl_stream(tokenizer, row, replies)
    assert verl_prompt == trl_prompt and verl_response == trl_response and verl_mask == trl_mask
    assert verl_mask[-1] == 1  # the last token is the model's: verl's reward lands on a trained token
    eos = tokenizer.eos_token_id
    assert [m for t, m in zip(verl_response, verl_mask) if t == eos][:2] == [0, 0]  # closed after the search
    assert sum(1 for t, m in zip(verl_response, verl_mask) if t == eos and m) == 1  # the untagged turn's own
