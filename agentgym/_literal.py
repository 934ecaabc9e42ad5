"""Bounded parsing of Python literals and JSON from text agentgym does not control.

Model text and inline queries reach these parsers, so each checks size limits *before* it parses:

* ``ast.literal_eval`` builds a full AST, hundreds of bytes per token: a 7.8 MB ``"[0,0,...]"`` took
  4.5 GB and 25 s. :func:`literal_eval` refuses texts over ``max_chars`` characters or with more than
  ``max_items`` separators (``,`` and ``:``, counted in C; each is at least one AST node). Nesting
  is bounded by CPython's tokenizer (200 levels of brackets).
* ``json.loads`` is linear, but raises ``ValueError`` (not ``JSONDecodeError``) on integers over
  4,300 digits and ``RecursionError`` on deep nesting. :func:`json_loads` refuses texts over
  ``max_chars`` and values nested deeper than ``max_depth``, and turns every failure into one
  :class:`LiteralError`.

CPython 3.11 can raise ``SystemError: AST constructor recursion depth mismatch`` when two threads
build ASTs at the same time (gh-106905). Envs are built and stepped in worker threads (the env
server, verl's executors), so every literal parse in agentgym goes through one lock.
"""

from __future__ import annotations

import ast
import json
import threading
from typing import Any

__all__ = ["LiteralError", "literal_eval", "json_loads", "nesting_depth"]

_LOCK = threading.Lock()

LITERAL_MAX_CHARS = 100_000
LITERAL_MAX_ITEMS = 5_000
JSON_MAX_DEPTH = 64


class LiteralError(ValueError):
    """The text is too large, too deep, or not a literal; the message says which (bounded length)."""


def literal_eval(text: str, *, max_chars: int = LITERAL_MAX_CHARS, max_items: int = LITERAL_MAX_ITEMS) -> Any:
    """``ast.literal_eval(text)`` within size limits, under a process-wide lock.

    Raises :class:`LiteralError` for any text it does not turn into a value."""
    if len(text) > max_chars:
        raise LiteralError(f"longer than {max_chars:,} characters ({len(text):,})")
    items = text.count(",") + text.count(":")
    if items > max_items:
        raise LiteralError(f"more than {max_items:,} items ({items:,} separators)")
    try:
        with _LOCK:
            return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, SystemError) as exc:
        raise LiteralError(f"not a Python literal ({type(exc).__name__}: {_short(exc)})") from None


def json_loads(text: str, *, max_chars: int, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """``json.loads(text)`` within size and depth limits; raises :class:`LiteralError` otherwise."""
    if len(text) > max_chars:
        raise LiteralError(f"longer than {max_chars:,} characters ({len(text):,})")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LiteralError(f"not valid JSON ({_short(exc)})") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # ints over 4,300 digits; deep nesting
        raise LiteralError(f"not usable JSON ({type(exc).__name__}: {_short(exc)})") from None
    # Opening brackets bound the depth from above: only count it when there are enough of them.
    if text.count("[") + text.count("{") > max_depth and nesting_depth(value, max_depth) > max_depth:
        raise LiteralError(f"nested deeper than {max_depth} levels")
    return value


def nesting_depth(value: Any, limit: int) -> int:
    """The depth of nested lists/dicts in ``value``, counted without recursion up to ``limit + 1``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = node.values()
        elif not isinstance(node, (list, tuple)):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in node if isinstance(child, (list, tuple, dict)))
    return deepest


def _short(exc: BaseException, limit: int = 80) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."
