"""Text the model reads: the first observation (instructions and question) and search results."""

from __future__ import annotations

import json

from agentgym.envs.searchqa.protocol import SEARCH_TOOLS
from agentgym.envs.searchqa.retrievers import Hit

__all__ = ["first_observation", "render_hits", "clip"]

_TAGS = """\
Answer the question below. Reason inside <think> and </think> whenever you get new information. \
If you lack knowledge, search by writing <search> query </search>: the top {top_k} passages come back \
between <information> and </information>. You may search up to {max_searches} times. {answer_rule}

Question: {question}"""

_JSON = """\
Answer the question below. If you lack knowledge, call the search tool as \
<tool_call>{{"name": "search", "arguments": {{"query": "..."}}}}</tool_call>: it returns the top {top_k} \
passages. You may search up to {max_searches} times. {answer_rule}
Tools:
<tools>
{tools}
</tools>

Question: {question}"""

_SHORT_RULE = ("When you know the answer, write it between <answer> and </answer> without explanation, "
               "for example <answer> Paris </answer>.")
_LONG_RULE = ("When you are done, write a complete answer of a few sentences between <answer> and </answer>, "
              "stating the facts you found.")


def first_observation(question: str, *, action_format: str, top_k: int, max_searches: int, long_form: bool,
                      template: str | None = None) -> str:
    """The instructions and the question; a custom ``template`` gets its placeholders filled."""
    question = question.strip()
    if question and question[-1] not in "?.!":
        question += "?"  # as Search-R1's data preparation does
    values = {"question": question, "top_k": str(top_k), "max_searches": str(max_searches),
              "tools": json.dumps(SEARCH_TOOLS.schemas(), ensure_ascii=False)}
    if template is not None:
        for name, value in values.items():  # replace, not format: templates may hold JSON braces
            template = template.replace("{" + name + "}", value)
        return template
    layout = _TAGS if action_format == "tags" else _JSON
    return layout.format(answer_rule=_LONG_RULE if long_form else _SHORT_RULE, **values)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, with ``...`` when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + " ..."


def render_hits(hits: list[Hit], *, action_format: str, passage_chars: int) -> str:
    """Search-R1's layout: ``Doc n(Title: title) text`` per line, in ``<information>`` for tags."""
    if hits:
        body = "\n".join(f"Doc {n}(Title: {clip(h.title, 200)}) {clip(h.text, passage_chars)}"
                         for n, h in enumerate(hits, 1))
    else:
        body = "No passages matched this query. Try other keywords."
    return f"\n\n<information>{body}</information>\n\n" if action_format == "tags" else body
