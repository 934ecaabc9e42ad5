"""The running state of one ``action_format="search-r1"`` episode: its transcript and Search-R1's counters.

Search-R1 scores the whole decoded sequence, prompt included (``qa_em``), so the episode keeps
the text Search-R1 would decode: the prompt, each turn as cut, each observation as appended.
The counters are the ones its generation loop reports per trajectory (``turns_stats``,
``valid_action_stats``, ``valid_search_stats``, ``active_mask``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentgym.envs.searchqa.actions import last_answer

__all__ = ["SearchR1Episode", "SCORINGS"]

SCORINGS = ("transcript", "answer")
"""``transcript``: Search-R1's reward, the last ``<answer>`` of prompt plus transcript (needs two);
``answer``: the answer the acting turn gave (no answer, no reward)."""


@dataclass
class SearchR1Episode:
    prompt: str
    pieces: list[str] = field(default_factory=list)
    turns_stats: int = 1  # Search-R1 starts at 1 and counts each search-phase turn that does not end
    valid_action_stats: int = 0
    valid_search_stats: int = 0
    active: bool = True

    def record(self, turn: str, observation: str, *, action: str, search_phase: bool) -> None:
        """One turn as Search-R1 keeps it: the cut turn text, then its observation (``action`` is
        ``search``, ``answer`` or ``invalid``; ``search_phase``: a turn before the final one)."""
        self.pieces += [turn, observation]
        if action != "invalid":
            self.valid_action_stats += 1
        if action == "search":
            self.valid_search_stats += 1
        if action == "answer":
            self.active = False
        elif search_phase:
            self.turns_stats += 1

    def scored_answer(self) -> str | None:
        """What ``qa_em`` scores: the last ``<answer>`` of the transcript, or None."""
        return last_answer(self.prompt + "".join(self.pieces))

    def counters(self) -> dict[str, Any]:
        return {"turns_stats": self.turns_stats, "valid_action_stats": self.valid_action_stats,
                "valid_search_stats": self.valid_search_stats, "active_mask": self.active}
