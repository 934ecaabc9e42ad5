"""The one rule every env applies before reading actions: thoughts are not actions.

Reasoning models (Qwen3, DeepSeek-R1 and their kin) write ``<think>...</think>`` before they
act, and may muse there about tool calls or answers they have not decided on. Only the text
outside think blocks is parsed for actions; the env still receives (and logs) the whole turn.

* A complete ``<think>...</think>`` block is thought.
* A ``</think>`` with no ``<think>`` before it closes a block the chat template opened in the
  prompt (as QwQ's and DeepSeek-R1's templates do): everything before it is thought.
* An unclosed ``<think>`` (the model ran out of tokens mid-thought) hides the rest of the turn.

Tags match case-insensitively, with optional whitespace before ``>``. One pass, linear time.
"""

from __future__ import annotations

import re

__all__ = ["strip_thoughts"]

# No nested quantifiers: each match attempt starts at a "<" and ends at the next non-space,
# so finditer is linear in the text.
_THINK_TAG = re.compile(r"<(/?)think\s*>", re.IGNORECASE)


def strip_thoughts(text: str) -> str:
    """``text`` without its think blocks, each replaced by one space."""
    kept: list[str] = []
    start, depth = 0, 0  # start: where the current kept (depth 0) stretch began
    seen_open = False
    for tag in _THINK_TAG.finditer(text):
        closing = tag.group(1) == "/"
        if not closing:
            if depth == 0:
                kept.append(text[start:tag.start()])
            depth += 1
            seen_open = True
        elif depth > 0:
            depth -= 1
            if depth == 0:
                kept.append(" ")
                start = tag.end()
        elif not seen_open:
            # The template opened this block in the prompt: all before it was thought.
            kept = [" "]
            start = tag.end()
            seen_open = True
        else:
            kept.append(text[start:tag.start()])  # a stray closing tag: drop the tag only
            start = tag.end()
    if depth == 0:
        kept.append(text[start:])
    return "".join(kept)
