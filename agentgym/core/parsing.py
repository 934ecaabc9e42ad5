"""Read an action out of model text: a tool call, a final answer, giving up, or an error.

Two syntaxes, chosen per env:

* ``react``: the official TravelPlanner action syntax, ``Name[arg1, arg2]`` with arguments
  split on ``", "``. An optional ``Action k:`` prefix and preceding thoughts are allowed; the
  action is the text after the last ``Action k:`` marker, or else the last line.
* ``json``: function calling as chat models emit it,
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

Text inside ``<think>...</think>`` is never read for actions (``agentgym.core.thoughts``).
In both, ``<answer>...</answer>`` submits a final answer (the last complete one counts), and
the control actions ``Finish[...]`` / ``GiveUp[...]`` (or tools ``finish`` / ``give_up``) end
the episode. Nothing here raises on model text: problems come back as ``ActionError``.

Model text can be a megabyte of one repeated tag, so every step here is linear in the text: tags
are found with ``str.find`` (``agentgym.core.tags``), the last ``Action k:`` marker with one regex
search over the reversed text (possessive quantifiers, so no backtracking), and tool-call JSON is
size- and depth-checked before it is parsed (``agentgym._json_limits``).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from agentgym import _json_limits
from agentgym._toolbox import clip, short
from agentgym.core.tags import first_block, has_tag, last_block
from agentgym.core.thoughts import strip_thoughts
from agentgym.core.tools import Tool, ToolBox
from agentgym.core.types import ActionError, ErrorCode

__all__ = ["Call", "Answer", "GiveUp", "Parsed", "parse_action", "FORMATS", "MAX_TOOL_CALL_CHARS"]

FORMATS = ("react", "json")
MAX_TOOL_CALL_CHARS = 100_000
"""A tool call's JSON longer than this is not parsed (a whole plan in ``finish`` is a few kB)."""

# ``Action\s*\d*\s*:`` read backwards: a search of the reversed text finds the last marker.
_ACTION_MARKER_REVERSED = re.compile(r":\s*+\d*+\s*+noitcA", re.IGNORECASE)
# Anchored by fullmatch: ``\w+`` and ``\[`` are disjoint and ``.*`` backtracks once, so linear.
_REACT = re.compile(r"(\w+)\[(.*)\]", re.DOTALL)
# Where str.splitlines() splits; the last line of a stripped text starts after the last of these.
_LINE_BREAKS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


@dataclass(frozen=True)
class Call:
    tool: Tool
    arguments: dict[str, str]


@dataclass(frozen=True)
class Answer:
    text: str


@dataclass(frozen=True)
class GiveUp:
    reason: str


Parsed = Call | Answer | GiveUp | ActionError


def parse_action(text: str, tools: ToolBox, fmt: str) -> Parsed:
    """Parse one turn of model text in format ``fmt`` (``react`` or ``json``)."""
    text = strip_thoughts(text)
    if not text.strip():
        return _error(ErrorCode.EMPTY_ACTION, "No feedback from the environment due to the null action. "
                      + _usage(fmt, tools))
    answer = _find_answer(text)
    if answer is not None:
        return answer
    return _parse_react(text, tools) if fmt == "react" else _parse_json(text, tools)


# -- answers ---------------------------------------------------------------------------------
def _find_answer(text: str) -> Answer | ActionError | None:
    if not has_tag(text, "answer"):
        return None
    found = last_block(text, "answer")
    if found is None:
        return _error(ErrorCode.UNPARSEABLE_ACTION,
                      "The <answer> tag is not closed. Write the whole answer as <answer>...</answer>.")
    return Answer(found.strip())


# -- react -----------------------------------------------------------------------------------
def _parse_react(text: str, tools: ToolBox) -> Parsed:
    match = _react_match(text)
    if match is None:
        return _error(ErrorCode.UNPARSEABLE_ACTION,
                      f"Could not find an action in your reply. {_usage('react', tools)}")
    name, arg = match.group(1), match.group(2).strip()
    if name == "Finish":
        return Answer(arg)
    if name == "GiveUp":
        return GiveUp(arg)
    tool = tools.by_action(name)
    if tool is None:
        return _unknown(name, [t.action for t in tools] + ["Finish", "GiveUp"], tools, "react")
    values = arg.split(", ") if arg else []
    if len(values) != len(tool.params):
        return _error(ErrorCode.WRONG_ARITY, f"{name} takes {len(tool.params)} argument(s) separated by ', ', "
                      f"got {len(values)}. Use {tool.signature}.")
    return Call(tool, {p.name: v for p, v in zip(tool.params, values)})


def _react_match(text: str) -> re.Match[str] | None:
    marker = _ACTION_MARKER_REVERSED.search(text[::-1])
    segment = text[len(text) - marker.start():] if marker else text
    segment = segment.strip()
    match = _REACT.fullmatch(segment)
    if match is None and segment:  # else the last non-blank line
        last_break = max(segment.rfind(c) for c in _LINE_BREAKS)
        match = _REACT.fullmatch(segment[last_break + 1:].strip()) if last_break >= 0 else None
    return match


# -- json ------------------------------------------------------------------------------------
def _parse_json(text: str, tools: ToolBox) -> Parsed:
    block = first_block(text, "tool_call")
    if block is None:
        stripped = text.strip()
        if "<tool_call>" in text:
            return _error(ErrorCode.UNPARSEABLE_ACTION,
                          "The <tool_call> tag is not closed. " + _usage("json", tools))
        if not stripped.startswith("{"):
            return _error(ErrorCode.UNPARSEABLE_ACTION, "No <tool_call> or <answer> found. " + _usage("json", tools))
        block = stripped
    try:
        obj = _json_limits.loads(block, max_chars=MAX_TOOL_CALL_CHARS)
    except _json_limits.JSONLimitError as exc:
        return _error(ErrorCode.UNPARSEABLE_ACTION, f"The tool call is too large to read ({exc}). "
                      + _usage("json", tools))
    except ValueError as exc:  # JSONDecodeError, or an integer over 4,300 digits
        return _error(ErrorCode.UNPARSEABLE_ACTION, f"The tool call is not valid JSON ({clip(str(exc), 80)}). "
                      + _usage("json", tools))
    return _json_call(obj, tools)


def _json_call(obj: Any, tools: ToolBox) -> Parsed:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return _error(ErrorCode.UNPARSEABLE_ACTION,
                      'A tool call must be a JSON object with a "name" string and an "arguments" object.')
    name, arguments = obj["name"], obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = _json_limits.loads(arguments, max_chars=MAX_TOOL_CALL_CHARS) if arguments.strip() else {}
        except ValueError:  # JSONLimitError is one too
            arguments = None
    if not isinstance(arguments, dict):
        return _error(ErrorCode.UNPARSEABLE_ACTION, f'"arguments" of {name} must be a JSON object.')
    if name in ("finish", "give_up"):
        text = arguments.get("plan", arguments.get("answer", arguments.get("reason", "")))
        text = text if isinstance(text, str) else json.dumps(text)
        return Answer(text) if name == "finish" else GiveUp(text)
    tool = tools.by_name(name) or tools.by_action(name)
    if tool is None:
        return _unknown(name, [t.name for t in tools] + ["finish", "give_up"], tools, "json")
    return _bind(tool, arguments)


def _bind(tool: Tool, arguments: dict[str, Any]) -> Parsed:
    expected = [p.name for p in tool.params]
    missing = [n for n in expected if n not in arguments]
    extra = [n for n in arguments if n not in expected]
    if missing or extra:
        what = f"missing {missing}" if missing else f"unexpected {extra}"
        return _error(ErrorCode.WRONG_ARITY, f"{tool.name} takes arguments {expected}; {what}.")
    bad = [n for n in expected if not isinstance(arguments[n], (str, int, float)) or isinstance(arguments[n], bool)]
    if bad:
        return _error(ErrorCode.INVALID_ARGUMENT, f"{tool.name}: argument {bad[0]!r} must be a string.")
    return Call(tool, {n: str(arguments[n]) for n in expected})


# -- messages --------------------------------------------------------------------------------
def _unknown(name: str, valid: list[str], tools: ToolBox, fmt: str) -> ActionError:
    close = difflib.get_close_matches(name, valid, n=1) if len(name) <= 100 else []
    hint = f" Did you mean {close[0]}?" if close else ""
    return _error(ErrorCode.UNKNOWN_TOOL, f"Unknown action {short(name)!r}.{hint} Valid actions: {', '.join(valid)}.")


def _usage(fmt: str, tools: ToolBox) -> str:
    if fmt == "react":
        example = tools.tools[0].signature if len(tools) else "Tool[arg]"
        return f"Write one action per turn, e.g. {example}, or Finish[<answer>]."
    return ('Call a tool as <tool_call>{"name": "...", "arguments": {...}}</tool_call>, '
            "or give the final answer as <answer>...</answer>.")


def _error(code: ErrorCode, message: str) -> ActionError:
    return ActionError(code=code, message=message)
