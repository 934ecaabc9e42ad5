"""TextSpace: any Python ``str`` up to a maximum length.

Gymnasium's ``spaces.Text`` checks every character against a charset (letters and digits by
default), so ordinary LLM text with spaces, punctuation or unicode would fail the env checker.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium.spaces import Space

__all__ = ["TextSpace"]

_SAMPLE_ALPHABET = np.array(list(string.printable + "éß中🙂"))


class TextSpace(Space[str]):
    """The set of all ``str`` values of at most ``max_length`` characters."""

    def __init__(self, max_length: int = 1_000_000, seed: int | np.random.Generator | None = None):
        if not isinstance(max_length, int) or max_length < 1:
            from agentgym.errors import ConfigError

            raise ConfigError("max_length", max_length, "a positive int")
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Draw a short random string (printable ASCII plus a few non-ASCII characters)."""
        length = int(self.np_random.integers(0, min(self.max_length, 64) + 1))
        return "".join(self.np_random.choice(_SAMPLE_ALPHABET, size=length))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length
