"""The tokens to keep of a model turn, and stop strings in each rollout engine's terms.

An env declares where its turns end (``TextEnv.turn_cut``, an ``agentgym.core.turn_cut.TurnCut``);
the agent loop passes its stop strings to the rollout server and, defensively, cuts any tokens the
server returned after the first complete action: text the model writes after its action (an
invented ``<information>`` block) must not be trained on. ``TurnCut`` and its text scans live in
``agentgym.core.turn_cut`` and are importable from here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentgym.core.turn_cut import TurnCut, ends_inside_thought, first_action_end, first_by_priority

__all__ = ["TurnCut", "first_action_end", "first_by_priority", "ends_inside_thought", "tokens_through",
           "sampling_stop_params"]


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
