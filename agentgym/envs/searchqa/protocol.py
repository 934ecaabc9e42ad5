"""Reading a turn of model text: the Search-R1 tag protocol, or JSON function calling.

Tags (``action_format="tags"``): ``<search>query</search>`` searches, ``<answer>text</answer>``
answers; complete ``<think>...</think>`` blocks, and ``<information>`` blocks the model wrote
itself, are ignored. The first complete tag decides the action, as Search-R1 cuts a turn at its
first ``</search>``; an answer takes the **last** well-formed ``<answer>`` block. Nested tags, a
tag closed by the wrong one, or a lone unclosed tag are errors; an unclosed tag after a complete
one, or a stray closing tag, is ignored and noted.

JSON (``action_format="json"``): ``<tool_call>{"name": "search", "arguments": {"query": ...}}</tool_call>``
or ``<answer>...</answer>``, read by ``agentgym.core.parsing.parse_action``.

Nothing here raises on model text: problems come back as ``ActionError``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentgym.core.parsing import Answer, Call, GiveUp, parse_action
from agentgym.core.tools import Param, Tool, ToolBox
from agentgym.core.types import ActionError, ErrorCode, ToolResult

__all__ = ["Search", "Reading", "read_action", "clean_text", "SEARCH_TOOLS", "ACTION_FORMATS"]

ACTION_FORMATS = ("tags", "json")
_IGNORED_BLOCKS = re.compile(r"<(think|information)>.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<(/?)(search|answer)\s*>", re.IGNORECASE)
_ANSWER_BLOCK = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
# C0/C1 controls (but tab and newline) and lone surrogates: never useful in a query or an answer.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")

TAG_USAGE = ("Put a search query between <search> and </search>, or the final answer between "
             "<answer> and </answer>.")
JSON_USAGE = ('Call the search tool as <tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>, '
              "or give the final answer as <answer>...</answer>.")


@dataclass(frozen=True)
class Search:
    query: str


@dataclass(frozen=True)
class Reading:
    """What a turn asked for, with what the parser noticed on the way."""

    action: Search | Answer | GiveUp | ActionError
    answer_blocks: int = 0
    """Well-formed ``<answer>`` blocks in the turn (the last one is the answer)."""
    notes: tuple[str, ...] = ()
    """Recoverable oddities that were ignored (an unclosed trailing tag, a stray closing tag)."""


def _search_tool_unused(query: str) -> ToolResult:
    # The env runs searches itself (it owns the retriever); the Tool only carries the schema.
    return ToolResult(content="", error=ErrorCode.TOOL_FAILED)


SEARCH_TOOLS = ToolBox([Tool(
    name="search", action="Search",
    description="Search the knowledge corpus and return the top passages (title and text) for the query.",
    params=(Param("query", "Query", "What to search for: a short keyword query or a question."),),
    run=_search_tool_unused,
)])


def clean_text(text: str) -> str:
    """Control characters and lone surrogates to spaces, then trimmed."""
    return _CONTROL.sub(" ", text).strip()


def read_action(text: str, action_format: str) -> Reading:
    """Read one turn of model text in ``action_format`` (``tags`` or ``json``)."""
    visible = _IGNORED_BLOCKS.sub(" ", text)
    if not visible.strip():
        usage = TAG_USAGE if action_format == "tags" else JSON_USAGE
        return Reading(_error(ErrorCode.EMPTY_ACTION, f"Your reply has no action. {usage}"))
    if action_format == "json":
        return _read_json(visible)
    return _read_tags(visible)


def _read_json(text: str) -> Reading:
    parsed = parse_action(text, SEARCH_TOOLS, "json")
    blocks = len(_ANSWER_BLOCK.findall(text))
    if isinstance(parsed, Call):
        return Reading(Search(parsed.arguments["query"]), blocks)
    return Reading(parsed, blocks)


def _read_tags(text: str) -> Reading:
    blocks: list[tuple[str, str]] = []
    notes: list[str] = []
    open_name, open_end = None, 0
    for match in _TAG.finditer(text):
        closing, name = match.group(1) == "/", match.group(2).lower()
        if not closing:
            if open_name is not None:
                return Reading(_error(ErrorCode.UNPARSEABLE_ACTION, f"Tags cannot be nested: close <{open_name}> "
                                      f"before opening <{name}>. {TAG_USAGE}"))
            open_name, open_end = name, match.end()
        elif open_name is None:
            notes.append(f"ignored a stray </{name}>")
        elif name != open_name:
            return Reading(_error(ErrorCode.UNPARSEABLE_ACTION,
                                  f"<{open_name}> was closed by </{name}>. {TAG_USAGE}"))
        else:
            blocks.append((name, text[open_end:match.start()]))
            open_name = None
    if open_name is not None:
        if not blocks:
            return Reading(_error(ErrorCode.UNPARSEABLE_ACTION, f"The <{open_name}> tag is not closed. "
                                  f"Write <{open_name}>...</{open_name}>."))
        notes.append(f"ignored an unclosed <{open_name}>")
    return _decide(blocks, tuple(notes))


def _decide(blocks: list[tuple[str, str]], notes: tuple[str, ...]) -> Reading:
    if not blocks:
        return Reading(_error(ErrorCode.UNPARSEABLE_ACTION, f"No action found in your reply. {TAG_USAGE}"), 0, notes)
    answers = [content for name, content in blocks if name == "answer"]
    if blocks[0][0] == "search":
        return Reading(Search(blocks[0][1]), len(answers), notes)
    return Reading(Answer(answers[-1]), len(answers), notes)


def _error(code: ErrorCode, message: str) -> ActionError:
    return ActionError(code=code, message=message)
