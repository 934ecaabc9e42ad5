"""The shared turn rules (``agentgym.integrations.turns``) with a scripted host: no trainer.

Tokens are characters (token = code point, 0 = end of turn), so every rule can be read off the text.
"""

from __future__ import annotations

import asyncio

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.integrations.search_r1_layout import SearchR1Layout
from agentgym.integrations.turns import RolloutResult, TokenStream, TurnCut, TurnRules, play_turns

EOS = 0
AGENTGYM = TurnCut(stops=("</search>", "</answer>"))
SEARCH_R1 = TurnCut(stops=("</search>",), priority=("</search>", "</answer>"), in_thoughts=True)
"""The cuts SearchQA-v0 declares under action_format="tags" and action_format="search-r1" (``TurnCut.of``)."""


class ScriptedHost:
    """Samples scripted replies, one per ``sample`` call; an env that answers every action with ``obs``."""

    def __init__(self, replies, *, obs="<information>x</information>", end_on="</answer>"):
        self.replies, self.obs, self.end_on = list(replies), obs, end_on
        self.actions = []

    async def sample(self, stream, params, continued, max_tokens, stops):
        text = self.replies.pop(0) if self.replies else "<answer>a</answer>"
        return [ord(c) for c in text][:max_tokens], None

    async def step(self, stream, env, text):
        self.actions.append(text)
        done = text.endswith(self.end_on)
        return self.obs, 1.0 if done else 0.0, done, False, {}

    def decode(self, tokens):
        return "".join(chr(t) for t in tokens if t != EOS)


class CharLayout:
    """Turns as sampled, observations one token per character."""

    observation_role = "user"

    def model_ids(self, tokens, logprobs, text):
        return tokens, logprobs

    def observation_ids(self, observation):
        return [ord(c) for c in observation]


def play(host, layout=None, **rules):
    stream, result = TokenStream(messages=[], token_ids=[ord("p")]), RolloutResult()
    rules = TurnRules(**{"response_length": 200, "stop_ids": (EOS,), "end_of_turn": EOS, "cut": AGENTGYM, **rules})
    asyncio.run(play_turns(host, layout or CharLayout(), rules, None, stream, result, {}))
    return stream, result


def test_a_turn_is_cut_after_its_first_action_and_closed_at_mask_0():
    host = ScriptedHost(["<search>q</search><information>made up</information>", "<answer>a</answer>"])
    stream, result = play(host)
    assert host.actions == ["<search>q</search>", "<answer>a</answer>"]
    first = len("<search>q</search>")
    assert stream.response_ids[first] == EOS and stream.response_mask[first] == 0
    assert result.stop_reason == "terminated" and result.env_return == 1.0


def test_the_last_turn_stays_open_so_the_stream_ends_on_a_sampled_token():
    """The closing token is written only before an observation: the episode's last turn, cut at its stop
    string, ends the stream on the model's own token, where verl pays the reward."""
    stream, _ = play(ScriptedHost(["<search>q</search>", "<answer>a</answer> and more"]))
    assert "".join(map(chr, stream.response_ids)).endswith("</answer>")
    assert stream.response_mask[-1] == 1 and stream.response_ids[-1] != EOS


def test_max_observations_ends_the_episode_after_the_turn_that_would_get_one_more():
    """verl's max_user_turns: with 1, the model gets one observation, then its next turn is the last."""
    host = ScriptedHost(["<search>q</search>"] * 5)
    stream, result = play(host, max_observations=1)
    assert result.stop_reason == "max_observations" and result.num_turns == 2 and result.observations == 1
    assert len(host.actions) == 2


def test_a_stop_string_inside_think_is_not_an_action_and_sampling_resumes():
    host = ScriptedHost(["<think>maybe <answer>x</answer>", "</think><search>q</search>", "<answer>a</answer>"])
    _, result = play(host)
    assert host.actions[0] == "<think>maybe <answer>x</answer></think><search>q</search>"
    assert result.num_turns == 2


def test_max_turns_and_the_budget_end_the_episode():
    _, result = play(ScriptedHost(["<search>q</search>"] * 5), max_turns=2)
    assert result.stop_reason == "max_turns" and result.num_turns == 2 and not result.done
    stream, result = play(ScriptedHost(["<search>" + "q" * 50 + "</search>"] * 5), response_length=40)
    assert result.stop_reason == "response_length" and len(stream.response_mask) == 40


@settings(max_examples=60, deadline=None)
@given(replies=st.lists(st.sampled_from(["<search>q</search>", "<answer>a</answer>", "noise", "<think>t</think>",
                                         "<search>q</search>tail", "<think><answer>x</answer>"]), max_size=6),
       budget=st.integers(1, 120), max_turns=st.one_of(st.none(), st.integers(1, 5)))
def test_masks_line_up_and_the_budget_is_never_exceeded(replies, budget, max_turns):
    host = ScriptedHost(replies)
    stream, result = play(host, response_length=budget, max_turns=max_turns)
    assert not stream.response_mask or stream.response_mask[-1] == 1  # the reward's token is a trained one
    assert len(stream.response_mask) == len(stream.response_ids) <= budget
    sampled = "".join(chr(t) for t, m in zip(stream.response_ids, stream.response_mask) if m == 1)
    assert "<information>" not in sampled  # observations are never the model's
    assert all(t == EOS or m == 1 or chr(t) in host.obs for t, m in zip(stream.response_ids, stream.response_mask))
    assert result.stop_reason in {"terminated", "max_turns", "response_length"}


def test_search_r1s_cut_reads_thoughts_and_prefers_search():
    """Search-R1 keeps a turn up to its first </search>, else its first </answer>, thoughts included:
    a search inside <think> is the action (no resuming), and an earlier answer does not win over it."""
    host = ScriptedHost(["<think>try <search>q</search>", "<answer>x</answer><search>r</search> tail",
                         "<think><answer>a</answer></think> tail"])
    stream, result = play(host, cut=SEARCH_R1, max_turns=3)
    assert host.actions == ["<think>try <search>q</search>", "<answer>x</answer><search>r</search>",
                            "<think><answer>a</answer>"]
    assert "tail" not in host.decode(stream.response_ids) and result.num_turns == 3


class CharTokenizer:
    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]


def test_the_search_r1_layout_re_tokenizes_the_cut_turn_and_appends_raw_observations():
    """Over the same rules, Search-R1's layout: the cut text tokenized again (mask 1), the observation's
    own tokens cut to max_observation_tokens (mask 0), and no end-of-turn token anywhere."""
    host = ScriptedHost(["<search>q</search> tail", "<answer>a</answer>"], obs="<information>abcdef</information>")
    layout = SearchR1Layout(CharTokenizer(), SEARCH_R1, max_observation_tokens=10)
    stream, result = TokenStream(messages=[], token_ids=[ord("p")]), RolloutResult()
    rules = layout.rules(TurnRules(response_length=200, stop_ids=(EOS,), end_of_turn=EOS))
    asyncio.run(play_turns(host, layout, rules, None, stream, result, {}))
    expected = "<search>q</search>" + "<information>abcdef</information>"[:10] + "<answer>a</answer>"
    assert "".join(map(chr, stream.response_ids)) == expected and EOS not in stream.response_ids
    assert stream.response_mask == [1] * 18 + [0] * 10 + [1] * 18
    assert result.stop_reason == "terminated"


@pytest.mark.parametrize("module", ["agentgym.integrations.turns", "agentgym.integrations.reward_info"])
def test_episode_result_is_the_deprecated_name_of_rollout_result(module):
    import importlib

    from agentgym._deprecated import AgentGymDeprecationWarning
    from agentgym.integrations.reward_info import RolloutResult

    with pytest.warns(AgentGymDeprecationWarning, match="EpisodeResult is deprecated"):
        assert getattr(importlib.import_module(module), "EpisodeResult") is RolloutResult


def test_the_turn_engines_old_name_warns_and_serves_play_turns():
    """``turns.play_episode`` clashed with ``agents.play_episode`` (which plays an agent); it is now
    ``play_turns``, the old name served for one release."""
    from agentgym import _deprecated
    from agentgym.integrations import turns

    with pytest.warns(_deprecated.AgentGymDeprecationWarning, match="play_turns"):
        assert turns.play_episode is play_turns
