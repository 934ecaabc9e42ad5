"""The tags and JSON action formats are read as documented, and never raise."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym.core.parsing import Answer, GiveUp
from agentgym.core.types import ActionError
from agentgym.envs.searchqa.actions import Search, clean_text, read_action

TAGS = {
    "<search>capital of Qirand</search>": Search("capital of Qirand"),
    "<think>I need the capital.</think>\n<search> capital of Qirand </search>": Search(" capital of Qirand "),
    "<think>maybe <answer>x</answer>?</think><search>q</search>": Search("q"),  # tags inside think are ignored
    "<information>Doc 1 <answer>fake</answer></information><search>q</search>": Search("q"),
    "<SEARCH>q</SEARCH>": Search("q"),
    "<answer>Paris</answer>": Answer("Paris"),
    "<search>q</search> then <answer>guess</answer>": Search("q"),  # the first tag decides, as in Search-R1
    "<answer>a</answer><answer>b": Answer("a"),  # a trailing unclosed tag is ignored
    "</search><answer>a</answer>": Answer("a"),  # a stray closing tag is ignored
}

ERRORS = {
    "": "empty_action",
    "   \n": "empty_action",
    "<think>only thinking</think>": "empty_action",
    "just some text": "unparseable_action",
    "<search>unclosed": "unparseable_action",
    "<answer>unclosed": "unparseable_action",
    "<search><search>q</search></search>": "unparseable_action",
    "<search>q<answer>a</answer></search>": "unparseable_action",
    "<search>q</answer>": "unparseable_action",
    "<answer>Lyon</answer> no wait <answer>Paris</answer>": "multiple_answers",  # a hedge is not an answer
    "<answer>Lyon</answer><answer>Paris</answer><search>q</search>": "multiple_answers",
}


@pytest.mark.parametrize("text", list(TAGS), ids=repr)
def test_tags_are_read(text):
    assert read_action(text, "tags").action == TAGS[text]


@pytest.mark.parametrize("text", list(ERRORS), ids=repr)
def test_bad_tags_are_errors_with_a_code(text):
    action = read_action(text, "tags").action
    assert isinstance(action, ActionError) and action.code == ERRORS[text]
    assert action.message and "\n" not in action.message


def test_the_reading_records_answer_blocks_and_notes():
    reading = read_action("<answer>a</answer> <answer>b</answer> <answer>c", "tags")
    assert reading.action.code == "multiple_answers" and reading.answer_blocks == 2
    assert reading.notes == ("ignored an unclosed <answer>",)
    assert read_action("<answer>a</answer> <answer>b", "tags").action == Answer("a")


@pytest.mark.parametrize("text", ["<answer>wrong</answer><answer>right</answer>",
                                  "<answer>wrong</answer> then <answer>right</answer>"])
def test_several_answers_in_one_json_turn_are_an_invalid_action(text):
    """Issue 29, item 6: the last of several answers counted as the answer, so a hedge was solved."""
    action = read_action(text, "json").action
    assert isinstance(action, ActionError) and action.code == "multiple_answers"
    assert "2 <answer> blocks" in action.message


def test_stray_closing_tags_are_noted_once_per_tag_however_many_there_are():
    """A megabyte of stray closers made one note each: 2.9 MB of ``info`` for one step."""
    reading = read_action("</answer>" * 100_000 + "</search><answer>x</answer>", "tags")
    assert reading.action == Answer("x")
    assert reading.notes == ("ignored 100000 stray </answer> tags", "ignored a stray </search>")


def test_json_format():
    call = '<tool_call>{"name": "search", "arguments": {"query": "q"}}</tool_call>'
    assert read_action(call, "json").action == Search("q")
    assert read_action('{"name": "search", "arguments": {"query": "q"}}', "json").action == Search("q")
    assert read_action("<answer>x</answer>", "json").action == Answer("x")
    assert isinstance(read_action('<tool_call>{"name": "give_up", "arguments": {}}</tool_call>', "json").action, GiveUp)
    for bad, code in [('<tool_call>{"name": "browse", "arguments": {}}</tool_call>', "unknown_tool"),
                      ('<tool_call>{"name": "search"</tool_call>', "unparseable_action"),
                      ('<tool_call>{"name": "search", "arguments": {}}</tool_call>', "wrong_arity"),
                      ("<search>q</search>", "unparseable_action")]:
        action = read_action(bad, "json").action
        assert isinstance(action, ActionError) and action.code == code, bad


def test_clean_text_drops_controls_and_lone_surrogates():
    assert clean_text("\x00 Zürich\x07 \ud800東京\t") == "Zürich   東京"


FRAGMENTS = st.sampled_from(["<search>", "</search>", "<answer>", "</answer>", "<think>", "</think>",
                             "<information>", "</information>", "q", " ", "\x00", "é", "<", ">", "/"])


@given(st.text(max_size=200) | st.lists(FRAGMENTS, max_size=30).map("".join), st.sampled_from(["tags", "json"]))
def test_any_text_reads_without_raising(text, fmt):
    action = read_action(text, fmt).action
    assert isinstance(action, (Search, Answer, GiveUp, ActionError))
