"""A ``TurnConstraint`` for tag actions: sampling restricted to well-formed ``<tag> words </tag>`` turns.

A random or tiny model almost never writes a well-formed action by chance, so nothing rewards it
and nothing is learned. ``TagConstraint`` lets it choose only among valid turns: an opening tag,
then 1..n words taken from the episode so far (its question, the passages it read), then the
closing tag and the end-of-turn token. Which tag, which words and how many are the model's
choice, and what it learns. The forced tokens (the closing tag, the end of turn) have
probability 1 under the constraint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.errors import ConfigError

__all__ = ["TagConstraint"]


class TagConstraint:
    """Allow ``<tag> w1 .. wk </tag><eos>`` with ``tags[tag] = (min_words, max_words)``; the words
    are tokens seen earlier in the episode (``words="episode"``) or any plain token (``"vocab"``)."""

    def __init__(self, tokenizer: Any, tags: Mapping[str, tuple[int, int]], *, words: str = "episode") -> None:
        if words not in ("episode", "vocab"):
            raise ConfigError("words", words, ["episode", "vocab"])
        self.eos = tokenizer.eos_token_id
        self.open: dict[int, tuple[int, int, int]] = {}
        for tag, (low, high) in tags.items():
            ids = [tokenizer.convert_tokens_to_ids(t) for t in (tag, tag.replace("<", "</", 1))]
            if any(i is None or i == tokenizer.unk_token_id for i in ids):
                raise ConfigError("tags", tag, "tags the tokenizer keeps whole (one token each)")
            if not 1 <= low <= high:
                raise ConfigError("tags", (low, high), "1 <= min_words <= max_words")
            self.open[ids[0]] = (ids[1], low, high)
        self.closing = {close for close, _, _ in self.open.values()}
        special = set(tokenizer.all_special_ids) | set(self.open) | self.closing
        added = set(tokenizer.get_added_vocab().values())
        self.plain = sorted(set(range(len(tokenizer))) - special - added)
        self.episode_words = words == "episode"
        self._plain_set = set(self.plain)

    def allowed(self, prefix: Sequence[int], turn: Sequence[int]) -> list[int]:
        if not turn:
            return list(self.open)
        if turn[-1] in self.closing or turn[-1] == self.eos:
            return [self.eos]
        opened = next((i for i in range(len(turn) - 1, -1, -1) if turn[i] in self.open), None)
        if opened is None:
            return list(self.open)
        close, low, high = self.open[turn[opened]]
        count = len(turn) - opened - 1
        words = self._words(prefix)
        if count >= high or not words:
            return [close]
        return words if count < low else [*words, close]

    def _words(self, prefix: Sequence[int]) -> list[int]:
        if not self.episode_words:
            return self.plain
        return sorted(self._plain_set.intersection(prefix))
