"""Bounded parsing of Python literals from text agentgym does not control (JSON: ``agentgym._json_limits``).

Model text and inline queries reach this parser, so it checks size limits *before* it parses:

* ``ast.literal_eval`` builds a full AST, hundreds of bytes per token: a 7.8 MB ``"[0,0,...]"`` took
  4.5 GB and 25 s. :func:`literal_eval` refuses texts over ``max_chars`` characters or with more than
  ``max_items`` separators (``,`` and ``:``, counted in C; each is at least one AST node). Nesting
  is bounded by CPython's tokenizer (200 levels of brackets).

CPython 3.11 can raise ``SystemError: AST constructor recursion depth mismatch`` when two threads
build ASTs at the same time (gh-106905). Envs are built and stepped in worker threads (the env
server, verl's executors), so every literal parse in agentgym goes through one lock.
"""

from __future__ import annotations

import ast
import threading
import warnings
from typing import Any

from agentgym._toolbox import clip

__all__ = ["LiteralError", "literal_eval"]

_LOCK = threading.Lock()

LITERAL_MAX_CHARS = 100_000
LITERAL_MAX_ITEMS = 5_000


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
        with _LOCK, warnings.catch_warnings():
            # model text is data: an invalid escape ("\d") is the model's, not a warning for the user
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, SystemError) as exc:
        raise LiteralError(f"not a Python literal ({type(exc).__name__}: {clip(str(exc), 80)})") from None
