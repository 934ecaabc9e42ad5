"""Text the model reads: the first observation (instructions and question) and search results."""

from __future__ import annotations

import json

from agentgym.envs.searchqa.actions import SEARCH_TOOLS
from agentgym.envs.searchqa.retrievers import Hit

__all__ = ["first_observation", "render_hits", "render_search_r1", "search_r1_question", "clip",
           "SEARCH_R1_PROMPT"]

SEARCH_R1_PROMPT = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get "
    "new information. After reasoning, if you find you lack some knowledge, you can call a search engine by "
    "<search> query </search> and it will return the top searched results between <information> and "
    "</information>. You can search as many times as your want. If you find no further external knowledge "
    "needed, you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. "
    "For example, <answer> Beijing </answer>. Question: {question}\n")
"""The user prompt of Search-R1's data preparation (``nq_search.py``, base template), typo included."""

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
    question = search_r1_question(question)
    values = {"question": question, "top_k": str(top_k), "max_searches": str(max_searches),
              "tools": json.dumps(SEARCH_TOOLS.schemas(), ensure_ascii=False)}
    if template is not None:
        for name, value in values.items():  # replace, not format: templates may hold JSON braces
            template = template.replace("{" + name + "}", value)
        return template
    layout = _TAGS if action_format == "tags" else _JSON
    return layout.format(answer_rule=_LONG_RULE if long_form else _SHORT_RULE, **values)


def search_r1_question(question: str) -> str:
    """Stripped, with a ``?`` appended unless it ends with one (after ``.`` or ``!`` too), as Search-R1 prepares it."""
    question = question.strip()
    return question + "?" if question and not question.endswith("?") else question


def render_search_r1(hits: list[Hit]) -> str:
    """Search-R1's observation: ``Doc n(Title: <first line of contents>) <the other lines>`` per hit.

    Rendered from each passage's raw ``contents``, so a quoted title keeps its quotes; no hits give
    an empty ``<information></information>``.
    """
    lines = []
    for n, hit in enumerate(hits, 1):
        title, _, text = hit.raw_contents().partition("\n")
        lines.append(f"Doc {n}(Title: {title}) {text}")
    return f"\n\n<information>{chr(10).join(lines).strip()}</information>\n\n"


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
