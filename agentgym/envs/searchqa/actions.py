"""Reading a turn of model text in an action format: tags, Search-R1's exact tags, or JSON function calling.

Every reader is one pass over the text (linear time on any input, such as a megabyte of one
repeated unclosed tag). The agentgym readers remove think blocks first by the shared rule,
``agentgym.core.thoughts.strip_thoughts``.

Search-R1 (``read_search_r1``, ``action_format="search-r1"``): the turn is cut after its
first ``</search>``, else after its first ``</answer>``; the first ``<search>`` or ``<answer>``
that has a matching close later decides the action, its content stripped. Tags are
case-sensitive and take no attributes or spaces (``<Answer>`` and ``<answer >`` are not tags).
``<think>`` is ordinary text there: Search-R1 reads tags inside it too. ``last_answer`` is
Search-R1's reward extraction (``qa_em``): the last ``<answer>`` of the whole transcript.

Tags (``action_format="tags"``): ``<search>query</search>`` searches,
``<answer>text</answer>`` answers; think blocks, and complete ``<information>`` blocks the model
wrote itself, are ignored. The first complete tag decides the action, as Search-R1 cuts a turn at its
first ``</search>``. A turn that answers gives exactly one well-formed ``<answer>`` block: two or more
(``<answer>wrong</answer><answer>right</answer>``, a hedge) is an invalid action, ``multiple_answers``.
Nested tags, a tag closed by the wrong one, or a lone unclosed tag are errors; an unclosed tag after a
complete one, or a stray closing tag, is ignored and noted.

JSON (``action_format="json"``): ``<tool_call>{"name": "search", "arguments": {"query": ...}}</tool_call>``
or ``<answer>...</answer>``, read by ``agentgym.core.parsing.parse_action``; several ``<answer>``
blocks are ``multiple_answers`` there too.

Nothing here raises on model text: problems come back as ``ActionError``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentgym.core.parsing import Answer, Call, GiveUp, parse_action
from agentgym.core.thoughts import strip_thoughts
from agentgym.core.tools import Param, Tool, ToolBox
from agentgym.core.types import ActionError, ErrorCode, ToolResult

__all__ = ["Search", "Reading", "read_action", "read_search_r1", "cut_turn", "last_answer", "clean_text",
           "SEARCH_TOOLS", "ACTION_FORMATS", "SEARCH_R1_INVALID"]

ACTION_FORMATS = ("tags", "json", "search-r1")
"""The action formats: ``read_action`` reads the first two, ``read_search_r1`` the third."""
# No nested quantifiers: each match attempt starts at a "<" and stops at the next non-space, so
# finditer is linear in the text (as in core.thoughts).
_INFORMATION_TAG = re.compile(r"<(/?)information\s*>", re.IGNORECASE)
_TAG = re.compile(r"<(/?)(search|answer)\s*>", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"<(/?)answer\s*>", re.IGNORECASE)
# C0/C1 controls (but tab and newline) and lone surrogates: never useful in a query or an answer.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")

TAG_USAGE = ("Put a search query between <search> and </search>, or the final answer between "
             "<answer> and </answer>.")
SEARCH_R1_INVALID = ("\nMy previous action is invalid. If I want to search, I should put the query between <search> "
                     "and </search>. If I want to give the final answer, I should put the answer between <answer> and "
                     "</answer>. Let me try again.\n")
"""Search-R1's fixed observation for a turn with no complete ``<search>`` or ``<answer>`` tag."""
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
    """Well-formed ``<answer>`` blocks in the turn (more than one makes an answer ``multiple_answers``)."""
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
    visible = _drop_information(strip_thoughts(text))
    if not visible.strip():
        usage = TAG_USAGE if action_format == "tags" else JSON_USAGE
        return Reading(_error(ErrorCode.EMPTY_ACTION, f"Your reply has no action. {usage}"))
    reading = _read_json(visible) if action_format == "json" else _read_tags(visible)
    if isinstance(reading.action, Answer) and reading.answer_blocks > 1:
        # A hedge (<answer>wrong</answer><answer>right</answer>) must not count as solved.
        return Reading(_error(ErrorCode.MULTIPLE_ANSWERS, f"Your reply has {reading.answer_blocks} <answer> "
                              "blocks; give exactly one answer, between <answer> and </answer>."),
                       reading.answer_blocks, reading.notes)
    return reading


def _read_json(text: str) -> Reading:
    parsed = parse_action(text, SEARCH_TOOLS, "json")
    blocks = _count_answer_blocks(text)
    if isinstance(parsed, Call):
        return Reading(Search(parsed.arguments["query"]), blocks)
    return Reading(parsed, blocks)


def _read_tags(text: str) -> Reading:
    # Only the first block, the last answer and the counts matter, so a megabyte of repeated
    # blocks or stray tags is walked without keeping each one (and its notes stay a few lines).
    first: tuple[str, int, int] | None = None  # name, content start, content end
    last_answer, answers = (0, 0), 0
    strays: dict[str, int] = {}
    open_name, open_end = None, 0
    for match in _TAG.finditer(text):
        closing, name = match.group(1, 2)
        name = name.lower()
        if not closing:
            if open_name is not None:
                return Reading(_error(ErrorCode.UNPARSEABLE_ACTION, f"Tags cannot be nested: close <{open_name}> "
                                      f"before opening <{name}>. {TAG_USAGE}"))
            open_name, open_end = name, match.end()
        elif open_name is None:
            strays[name] = strays.get(name, 0) + 1
        elif name != open_name:
            return Reading(_error(ErrorCode.UNPARSEABLE_ACTION,
                                  f"<{open_name}> was closed by </{name}>. {TAG_USAGE}"))
        else:
            first = first or (name, open_end, match.start())
            if name == "answer":
                last_answer, answers = (open_end, match.start()), answers + 1
            open_name = None
    notes = [f"ignored a stray </{name}>" if n == 1 else f"ignored {n} stray </{name}> tags"
             for name, n in strays.items()]
    if open_name is not None:
        if first is None:
            return Reading(_error(ErrorCode.UNPARSEABLE_ACTION, f"The <{open_name}> tag is not closed. "
                                  f"Write <{open_name}>...</{open_name}>."))
        notes.append(f"ignored an unclosed <{open_name}>")
    if first is None:
        return Reading(_error(ErrorCode.UNPARSEABLE_ACTION, f"No action found in your reply. {TAG_USAGE}"), 0,
                       tuple(notes))
    name, start, end = first
    action = Search(text[start:end]) if name == "search" else Answer(text[slice(*last_answer)])
    return Reading(action, answers, tuple(notes))


def _error(code: ErrorCode, message: str) -> ActionError:
    return ActionError(code=code, message=message)


def _drop_information(text: str) -> str:
    """``text`` without its complete ``<information>...</information>`` blocks (each becomes a space).

    A block runs from an opening tag to the first closing tag after it; an unclosed opening tag
    and what follows it are kept, as a lazy ``<information>.*?</information>`` would leave them.
    """
    kept: list[str] = []
    start, open_at = 0, -1
    for tag in _INFORMATION_TAG.finditer(text):
        if tag.group(1) != "/":
            if open_at < 0:
                open_at = tag.start()
        elif open_at >= 0:
            kept.append(text[start:open_at])
            kept.append(" ")
            start, open_at = tag.end(), -1
    kept.append(text[start:])
    return "".join(kept)


def _count_answer_blocks(text: str) -> int:
    count, inside = 0, False
    for tag in _ANSWER_TAG.finditer(text):
        closing = tag.group(1) == "/"
        if closing and inside:
            count += 1
        inside = not closing
    return count


# -- Search-R1's tags --------------------------------------------------------------------------
def cut_turn(text: str) -> str:
    """The turn as Search-R1 keeps it: up to its first ``</search>``, else its first ``</answer>``."""
    for close in ("</search>", "</answer>"):
        end = text.find(close)
        if end >= 0:
            return text[:end + len(close)]
    return text


def read_search_r1(text: str) -> Reading:
    """Read one turn with Search-R1's rules (module docstring); no complete tag is an ``ActionError``."""
    found = _first_tag_block(cut_turn(text))
    if found is None:
        code = ErrorCode.EMPTY_ACTION if not text.strip() else ErrorCode.UNPARSEABLE_ACTION
        return Reading(_error(code, "Your reply has no complete <search> or <answer> tag. " + TAG_USAGE))
    name, content = found
    if name == "search":
        return Reading(Search(content.strip()))
    return Reading(Answer(content.strip()), 1)


def _first_tag_block(text: str) -> tuple[str, str] | None:
    """The earliest ``<search>`` or ``<answer>`` with its name's closing tag after it, and its content.

    What a first match of ``<(search|answer)>(.*?)</\\1>`` finds, in linear time: when the last
    closing tag of a name lies before an opening tag, no later opening tag of that name can close.
    """
    last_close = {name: text.rfind(f"</{name}>") for name in ("search", "answer")}
    next_open = {name: text.find(f"<{name}>") for name in ("search", "answer")}
    while True:
        live = [(at, name) for name, at in next_open.items() if at >= 0]
        if not live:
            return None
        at, name = min(live)
        start = at + len(name) + 2
        if last_close[name] >= start:
            return name, text[start:text.find(f"</{name}>", start)]
        next_open[name] = -1


def last_answer(text: str) -> str | None:
    """The content (stripped) of the last ``<answer>...</answer>`` in ``text``, or None when ``text``
    has fewer than two: Search-R1's ``qa_em`` extraction, which expects its prompt's own example.

    What ``finditer`` of ``<answer>(.*?)</answer>`` (DOTALL) finds, one pass of ``str.find``:
    matches do not overlap, and once an opening tag has no closing tag after it, none later has.
    """
    count, last, position = 0, None, 0
    while True:
        start = text.find("<answer>", position)
        if start < 0:
            break
        end = text.find("</answer>", start + 8)
        if end < 0:
            break
        count, last, position = count + 1, (start + 8, end), end + 9
    return text[slice(*last)].strip() if count >= 2 else None
