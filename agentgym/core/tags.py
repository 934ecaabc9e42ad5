"""Find ``<name>...</name>`` blocks in model text in linear time, with a handful of C-level searches.

The pattern ``<name>(.*?)</name>`` backtracks quadratically on an unclosed repeated tag
(``"<answer>" * 32000`` took 28 s). These functions give the same blocks as ``re.findall`` of that
pattern, without a regex: an opening tag starts a block, the first closing tag after it ends it,
and closing tags outside a block are ignored. Each function makes a fixed number of
``str.find``/``str.rfind`` passes over the text, so a megabyte of repeated tags costs milliseconds.

``ignore_case=True`` matches tags as ``str.lower`` does (``<ANSWER>`` is ``<answer>``).
"""

from __future__ import annotations

__all__ = ["first_block", "last_block", "has_tag"]


def _fold(text: str, ignore_case: bool) -> str:
    if not ignore_case:
        return text
    # U+0130 is the one character that lowers to two; replacing it keeps indices true.
    return text.replace("\u0130", "?").lower()


def has_tag(text: str, name: str, *, ignore_case: bool = True) -> bool:
    """Whether ``<name>`` occurs in ``text``."""
    return f"<{name}>" in _fold(text, ignore_case)


def first_block(text: str, name: str, *, ignore_case: bool = False) -> str | None:
    """The content of the first complete ``<name>...</name>`` block, or None."""
    folded = _fold(text, ignore_case)
    opening, closing = f"<{name}>", f"</{name}>"
    start = folded.find(opening)
    if start < 0:
        return None
    end = folded.find(closing, start + len(opening))
    return None if end < 0 else text[start + len(opening):end]


def last_block(text: str, name: str, *, ignore_case: bool = True) -> str | None:
    """The content of the last complete ``<name>...</name>`` block, or None.

    The last block ends at the first closing tag after the last opening tag that has a closing tag
    after it, and starts at the first opening tag after the closing tag before that one."""
    folded = _fold(text, ignore_case)
    opening, closing = f"<{name}>", f"</{name}>"
    last_close = folded.rfind(closing)
    if last_close < 0:
        return None
    inner_open = folded.rfind(opening, 0, last_close)
    if inner_open < 0:
        return None
    end = folded.find(closing, inner_open + len(opening))
    previous_close = folded.rfind(closing, 0, inner_open)
    start = folded.find(opening, 0 if previous_close < 0 else previous_close + len(closing))
    return text[start + len(opening):end]
