"""Where a model turn's first complete action ends, and the tokens to keep up to there.

An env declares the strings that close its actions (``TextEnv.stop_strings``, e.g. ``</search>``
and ``</answer>`` for SearchQA). The agent loop passes them to the rollout server as stop strings
and, defensively, cuts any tokens the server returned after the first one: text the model writes
after its action (an invented ``<information>`` block) must not be trained on.

A stop string inside a think block is not an action (``agentgym.core.thoughts``): the model may
muse about ``<answer>`` there. The scan follows the same rule as ``strip_thoughts`` (complete
blocks, an unclosed ``<think>``, a leading ``</think>`` closing a block the template opened) in
one linear pass.

An env may declare another rule (``TextEnv.stop_priority``, ``TextEnv.stops_in_thoughts``):
Search-R1's loop generates a whole turn and keeps it up to its first ``</search>``, else its first
``</answer>``, tags inside ``<think>`` included. ``TurnCut.of(env)`` reads what the env declared,
so the loop cuts each turn where the env reads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TurnCut", "first_action_end", "first_by_priority", "ends_inside_thought", "tokens_through",
           "sampling_stop_params"]

_THINK_TAG = re.compile(r"<(/?)think\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class TurnCut:
    """Where a model turn ends, as its env declared it."""

    stops: tuple[str, ...] = ()
    """The stop strings for the rollout server."""
    priority: tuple[str, ...] = ()
    """Cut at the first occurrence of the first of these the turn holds (empty: the earliest stop)."""
    in_thoughts: bool = False
    """Whether a stop string inside ``<think>`` ends the turn."""

    @classmethod
    def of(cls, env: Any) -> TurnCut:
        inner = getattr(env, "unwrapped", env)
        stops = tuple(str(s) for s in getattr(inner, "stop_strings", ()) or () if s)
        priority = tuple(str(s) for s in getattr(inner, "stop_priority", ()) or () if s)
        return cls(stops, priority, bool(getattr(inner, "stops_in_thoughts", False)))

    def end(self, text: str) -> int | None:
        """The index just past where the env stops reading ``text``, or None."""
        if self.priority and self.in_thoughts:
            return first_by_priority(text, self.priority)
        if self.priority:
            return next((end for s in self.priority if (end := first_action_end(text, (s,))) is not None), None)
        if self.in_thoughts:
            found = [at + len(s) for s in self.stops if (at := text.find(s)) >= 0]
            return min(found) if found else None
        return first_action_end(text, self.stops)

    def resumes(self, text: str) -> bool:
        """Whether a turn the server stopped on a stop string must go on (it stopped inside a thought)."""
        return not self.in_thoughts and ends_inside_thought(text)


def first_by_priority(text: str, strings: Sequence[str]) -> int | None:
    """The index just past the first occurrence of the first of ``strings`` that ``text`` holds."""
    for string in strings:
        at = text.find(string)
        if at >= 0:
            return at + len(string)
    return None


def first_action_end(text: str, stops: Sequence[str]) -> int | None:
    """The index just past the first stop string outside think blocks, or None."""
    stops = [s for s in stops if s]
    if not stops:
        return None
    tags = [(m.start(), m.end(), m.group(1) == "/") for m in _THINK_TAG.finditer(text)]
    visible_from = 0
    if tags and tags[0][2]:  # a leading </think>: the template opened the block, all before it is thought
        visible_from = tags[0][1]
        tags = tags[1:]
    depth, position, t = 0, visible_from, 0
    upcoming = {stop: text.find(stop, position) for stop in stops}  # each stop's next occurrence
    while True:
        for stop, at in upcoming.items():
            if 0 <= at < position:  # consumed: look further (each stop's scan moves forward only)
                upcoming[stop] = text.find(stop, position)
        found = [(at, at + len(stop)) for stop, at in upcoming.items() if at >= 0]
        if not found:
            return None
        start, end = min(found)
        while t < len(tags) and tags[t][0] < start:
            depth = depth + 1 if not tags[t][2] else max(0, depth - 1)
            t += 1
        if depth == 0:
            return end
        position = start + 1


def ends_inside_thought(text: str) -> bool:
    """True when ``text`` stops inside an open ``<think>`` block."""
    depth = 0
    for m in _THINK_TAG.finditer(text):
        depth = depth + 1 if m.group(1) != "/" else max(0, depth - 1)
    return depth > 0


def tokens_through(tokens: Sequence[int], decode: Callable[[Sequence[int]], str], end: int) -> int:
    """The fewest leading tokens whose text reaches character ``end`` (binary search: the decoded
    length only grows with more tokens, so this costs O(log n) decodes)."""
    low, high = 1, len(tokens)
    while low < high:
        middle = (low + high) // 2
        if len(decode(tokens[:middle])) >= end:
            high = middle
        else:
            low = middle + 1
    return high


def sampling_stop_params(rollout_name: str, stops: Sequence[str]) -> dict[str, object]:
    """Stop-string sampling params in the rollout engine's own terms, the stop string kept in the
    output (the env needs the closing tag to read the action); unknown engines get none."""
    if not stops:
        return {}
    if rollout_name == "vllm":
        return {"stop": list(stops), "include_stop_str_in_output": True}
    if rollout_name == "sglang":
        return {"stop": list(stops), "no_stop_trim": True}
    return {}
