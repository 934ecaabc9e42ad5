"""JSON parsing with its bounds checked first: text size and nesting depth.

``json.loads`` recurses once per nested array or object, so ``"[" * 200_000`` raises
``RecursionError`` deep inside the parser. :func:`loads` counts the nesting in one linear pass
before parsing and raises ``JSONLimitError`` instead; every failure is a ``ValueError``.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["JSONLimitError", "MAX_DEPTH", "exceeds_depth", "loads"]

MAX_DEPTH = 64
"""Deepest nesting parsed by default: chat completions, retriever replies and specs need under 10."""

# Fixed-length tokens only (an escape pair, a quote, a bracket): finditer moves forward, so one pass.
_TOKENS = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


class JSONLimitError(ValueError):
    """The text is larger or nests deeper than the limit; it was not parsed."""


def exceeds_depth(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests arrays and objects deeper than ``limit`` (brackets in strings skipped)."""
    if text.count("[") + text.count("{") <= limit:  # cannot nest deeper than it has brackets
        return False
    depth, in_string = 0, False
    for match in _TOKENS.finditer(text):
        token = match.group()
        if in_string:
            in_string = token != '"'
        elif token == '"':
            in_string = True
        elif token == "[" or token == "{":
            depth += 1
            if depth > limit:
                return True
        elif token == "]" or token == "}":
            depth -= 1
    return False


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH, max_chars: int | None = None) -> Any:
    """``json.loads(text)`` once ``text`` is within ``max_chars`` and ``max_depth``.

    Raises ``JSONLimitError`` past a limit and another ``ValueError`` for text that is not JSON
    (``JSONDecodeError``, undecodable bytes, an integer longer than Python converts).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # UnicodeDecodeError is a ValueError
    if max_chars is not None and len(text) > max_chars:
        raise JSONLimitError(f"{len(text)} characters, more than the {max_chars} allowed")
    if exceeds_depth(text, max_depth):
        raise JSONLimitError(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except RecursionError:  # a limit above what this thread's stack allows
        raise JSONLimitError(f"nested too deep to parse (limit {max_depth})") from None
