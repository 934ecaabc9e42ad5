"""The linear tag scanners give what the backtracking patterns they replace gave.

``<answer>(.*?)</answer>`` (last match), ``<tool_call>(.*?)</tool_call>`` (first match), the fence
pattern of the plan reader and the last ``Action k:`` marker are each checked against the original
regex on random short texts built from tag fragments.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentgym.core import parsing
from agentgym.core.tags import first_block, has_tag, last_block
from agentgym.envs.travelplanner import plan

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_ACTION_MARKER = re.compile(r"Action\s*\d*\s*:", re.IGNORECASE)

_TEXT = st.lists(st.sampled_from([
    "<answer>", "</answer>", "<ANSWER>", "</Answer>", "<tool_call>", "</tool_call>", "x", " ", "\n", "<", ">",
    "```", "json", "`", "Action", "action 2", ":", "3", "\t", "İ",
]), max_size=16).map("".join)


@settings(max_examples=800, deadline=None)
@given(_TEXT)
@example("<answer>a</answer><answer>b")
@example("</answer><answer>a<answer>b</answer></answer>c")
@example("İ<answer>x</answer>")
def test_tag_blocks_match_the_patterns(text):
    found = _ANSWER.findall(text)
    assert last_block(text, "answer") == (found[-1] if found else None)
    assert has_tag(text, "answer") == ("<answer>" in text.lower())
    calls = _TOOL_CALL.findall(text)
    assert first_block(text, "tool_call") == (calls[0] if calls else None)


@settings(max_examples=500, deadline=None)
@given(_TEXT)
@example("```json\n[1]```")
@example("````")
@example("```a```b```")
def test_the_fence_reader_matches_the_pattern(text):
    m = _FENCE.search(text)
    assert plan._fenced(text) == (m.group(1) if m else None)


@settings(max_examples=500, deadline=None)
@given(_TEXT)
@example("Action 1: a\nAction 2 : b")
def test_the_last_action_marker_matches_the_pattern(text):
    markers = list(_ACTION_MARKER.finditer(text))
    reversed_match = parsing._ACTION_MARKER_REVERSED.search(text[::-1])
    assert (len(text) - reversed_match.start() if reversed_match else None) == (markers[-1].end() if markers else None)
