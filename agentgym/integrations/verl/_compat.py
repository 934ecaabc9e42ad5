"""What differs between the verl releases agentgym runs on, in one place.

verl 0.9.1's agent loops merge a non-assistant message (an observation) into the running tokens
with ``ct_merge_context_msg``; verl's main branch (0.10.0.dev, PR #6804) renamed it
``ct_merge_non_assistant_msg`` with the same arguments and result. ``merge_observation`` calls
whichever the installed verl has.
"""

from __future__ import annotations

from typing import Any

from agentgym.errors import DependencyNotInstalled

__all__ = ["merge_observation"]

_MERGE_NAMES = ("ct_merge_non_assistant_msg", "ct_merge_context_msg")


async def merge_observation(loop: Any, previous: list[dict], updated: list[dict], token_ids: list[int],
                            response_mask: list[int], logprobs: list[float] | None) -> Any:
    """``(merge_result, response_mask, logprobs)`` after appending ``updated[len(previous):]``."""
    for name in _MERGE_NAMES:
        merge = getattr(loop, name, None)
        if merge is not None:
            return await merge(previous, updated, token_ids, response_mask, logprobs)
    raise DependencyNotInstalled(f"{type(loop).__name__} has none of {', '.join(_MERGE_NAMES)}: this verl is "
                                 "neither 0.9.1 nor its main branch; pip install 'agentgym[verl]'")
