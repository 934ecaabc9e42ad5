"""The verl agent loop under ``action_format="search-r1"``: turn cut, stop strings and Search-R1's token layout.

The loop runs against the harness's fake LLM server (a stand-in for vLLM/SGLang, which need a
GPU) with a byte-level BPE trained here and the Qwen2.5 chat template of ``agentgym verl selftest``.
"""

from __future__ import annotations

import re

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("verl")

import verl_harness as h  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.envs.searchqa.actions import cut_turn, read_action, read_search_r1  # noqa: E402
from agentgym.integrations.verl import plugin  # noqa: E402,F401  (registers the loop)
from agentgym.core.turn_cut import TurnCut  # noqa: E402
from agentgym.core.types import ErrorCode  # noqa: E402

CORPUS = [
    {"id": "0", "contents": '"Evan Morris"\nEvan Morris (1977 - 2015) was a lobbyist for Genentech.\nHe lived in DC.'},
    {"id": "1", "contents": '"Genentech"\nGenentech is a biotechnology company founded in 1976.'},
    {"id": "2", "contents": '"Roche"\nRoche acquired Genentech in 2009.'},
]
PARTS = ["<search>", "</search>", "<answer>", "</answer>", "<think>", "</think>", "q", " ", "x", "\n"]


@pytest.fixture(scope="module")
def qwen_tokenizer(tmp_path_factory):
    """The selftest's tokenizer: byte-level BPE with the Qwen2.5 chat template (the tiny model is unused)."""
    from agentgym.integrations.verl.preflight.selftest import build_tiny_model

    corpus = [c["contents"] for c in CORPUS] * 20 + ["<search> </search> <answer> </answer> <information>"] * 20
    _, tokenizer = build_tiny_model(tmp_path_factory.mktemp("qwen"), corpus)
    return tokenizer


def _env(action_format):
    return gymnasium.make("SearchQA-v0", action_format=action_format, corpus=CORPUS, tasks=[
        {"question": "Which company did Evan Morris work for", "golden_answers": ["Genentech"]}])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PARTS), max_size=14).map("".join))
def test_the_loops_cut_is_where_search_r1_cuts_the_turn(text):
    """Search-R1 reads a turn up to its first </search>, else its first </answer>, thoughts included:
    what the loop keeps reads the same, and is exactly Search-R1's cut."""
    cut = TurnCut.of(_ENVS["search-r1"])
    end = cut.end(text)
    kept = text if end is None else text[:end]
    assert kept == cut_turn(text) and read_search_r1(kept) == read_search_r1(text)


BLOCKS = ["<think>a <search>t</search></think>", "<think><answer>t</answer></think>", "<search>q</search>",
          "<search>r</search>", "<answer>x</answer>", " y ", "<think>unclosed "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(BLOCKS), max_size=6).map("".join))
def test_the_loops_cut_keeps_the_agentgym_action(text):
    """Under agentgym the first complete tag outside thoughts decides, and the kept text decides the same.
    (A turn with several answers reaches the env as its first: the server stops at the first </answer>.)"""
    end = TurnCut.of(_ENVS["agentgym"]).end(text)
    kept = text if end is None else text[:end]
    whole, cut = read_action(text, "tags").action, read_action(kept, "tags").action
    if type(whole).__name__ == "Answer" or getattr(whole, "code", None) == ErrorCode.MULTIPLE_ANSWERS:
        assert type(cut).__name__ == "Answer"
    else:
        assert cut == whole


_ENVS = {"search-r1": _env("search-r1"), "agentgym": _env("tags")}


def test_search_r1_stops_only_at_search_close_and_reads_thoughts():
    cut = TurnCut.of(_ENVS["search-r1"])
    assert cut.stops == ("</search>",) and cut.in_thoughts
    assert not cut.resumes("<think>a <search>q</search>")  # Search-R1 searches here
    agentgym_cut = TurnCut.of(_ENVS["agentgym"])
    assert agentgym_cut.stops == ("</search>", "</answer>") and agentgym_cut.resumes("<think>a <search>q</search>")


def _rows(tmp_path):
    from agentgym.integrations.verl.prepare import prepare_rows

    question = tmp_path / "nq_train.jsonl"
    question.write_text('{"id": "nq-7", "question": "Which company did Evan Morris work for", '
                        '"golden_answers": ["Genentech"]}\n')
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(__import__("json").dumps(c) + "\n" for c in CORPUS))
    return prepare_rows("SearchQA-v0", tasks=question, env_kwargs={
        "action_format": "search-r1", "corpus": str(corpus), "cache_dir": str(tmp_path / "cache")})


@pytest.mark.parametrize("layout", ["chat", "search-r1"])
def test_the_loop_plays_the_issue_case_as_search_r1(tmp_path, qwen_tokenizer, layout):
    """A search inside <think> runs; answers after the acting one are scored (transcript scoring)."""
    replies = ["<think>try <search>Evan Morris</search></think> ignored",
               "<answer>Roche</answer><answer>Genentech</answer><search>q</search> ignored"]
    server = h.FakeServer(qwen_tokenizer, lambda rid, turn: replies[min(turn, 1)])
    config = h.trainer_config(agentgym={"layout": layout}, rollout_name="vllm")
    (out,) = h.run_rows(qwen_tokenizer, server, config, _rows(tmp_path))
    assert server.calls[0]["sampling_params"]["stop"] == ["</search>"]
    assert out.reward_score == 1.0 and out.extra_fields["agentgym"]["stop_reason"] == "terminated"
    text = qwen_tokenizer.decode(out.response_ids)
    assert "<information>Doc 1(Title: \"Evan Morris\")" in text and "ignored" not in text


def test_the_search_r1_layout_is_search_r1s_tokens(tmp_path, qwen_tokenizer):
    """Search-R1's layout: the chat-templated prompt, then one response of re-tokenized cut turns and
    raw observation tokens (cut to max_observation_tokens), no end-of-turn token, observations untrained;
    the reward is qa_em on the decoded prompt + response."""
    replies = ["<think>find him</think><search>Evan Morris</search><information>made up",
               "no tags at all", "<answer> Genentech </answer> trailing"]
    server = h.FakeServer(qwen_tokenizer, lambda rid, turn: replies[min(turn, 2)])
    config = h.trainer_config(agentgym={"layout": "search-r1", "max_observation_tokens": 40}, rollout_name="vllm")
    rows = _rows(tmp_path)
    (out,) = h.run_rows(qwen_tokenizer, server, config, rows)

    env = _ENVS["search-r1"]
    env.reset(options={"task": {"question": "Which company did Evan Morris work for", "golden_answers": ["x"]}})
    encode = lambda s: qwen_tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    observation = env.step("<search>Evan Morris</search>")[0]
    invalid = env.step("no tags at all")[0]
    turns = ["<think>find him</think><search>Evan Morris</search>", "no tags at all", "<answer> Genentech </answer>"]
    expected = (encode(turns[0]) + encode(observation)[:40] + encode(turns[1]) + encode(invalid)[:40]
                + encode(turns[2]))
    masks = [1] * len(encode(turns[0])) + [0] * len(encode(observation)[:40]) + [1] * len(encode(turns[1])) \
        + [0] * len(encode(invalid)[:40]) + [1] * len(encode(turns[2]))
    assert out.response_ids == expected and out.response_mask == masks
    assert out.prompt_ids == qwen_tokenizer.apply_chat_template(rows[0]["prompt"], add_generation_prompt=True,
                                                                tokenize=True, return_dict=False)
    assert qwen_tokenizer.eos_token_id not in out.response_ids and out.response_logprobs is None
    decoded = qwen_tokenizer.decode(out.prompt_ids + out.response_ids)
    answers = re.findall(r"<answer>(.*?)</answer>", decoded, re.DOTALL)
    assert answers[-1].strip() == "Genentech" and out.reward_score == 1.0


def test_the_search_r1_layout_refuses_another_action_format(tmp_path, qwen_tokenizer):
    from agentgym.integrations.verl.prepare import prepare_rows

    rows = prepare_rows("SearchQA-v0", split="train", limit=1, env_kwargs={"synthetic_size": "small"})
    server = h.FakeServer(qwen_tokenizer, lambda rid, turn: "<answer>x</answer>")
    config = h.trainer_config(agentgym={"layout": "search-r1"}, rollout_name="vllm")
    (out,) = h.run_rows(qwen_tokenizer, server, config, rows)
    assert "layout" in out.extra_fields["agentgym"]["fatal"]


@pytest.mark.parametrize("cut, text, end", [
    (TurnCut(("</a>", "</b>"), ("</a>", "</b>"), False), "<think></a></think> x</b> y</a>",
     len("<think></a></think> x</b> y</a>")),
    (TurnCut(("</a>", "</b>"), ("</a>", "</b>"), True), "<think></a></think> x</b> y</a>", len("<think></a>")),
    (TurnCut(("</a>", "</b>"), (), True), "x</b> y</a>", len("x</b>")),
    (TurnCut(("</a>",), (), False), "<think></a></think>x", None),
])
def test_each_declared_rule_cuts_where_it_says(cut, text, end):
    assert cut.end(text) == end
