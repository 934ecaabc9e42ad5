"""``TurnConstraint``s for tag and ReAct actions: sampling restricted to well-formed turns.

A random or tiny model almost never writes a well-formed action by chance, so nothing rewards it
and nothing is learned. The constraints let it choose only among well-formed turns:

* ``TagConstraint``: an opening tag, then 1..n words taken from the episode so far (its
  question, the passages it read), then the closing tag and the end-of-turn token;
* ``ReactConstraint``: a tool name, ``[``, 1..n words of the episode, ``]`` and the end-of-turn
  token (``CitySearch[Texas]``). Whether the arguments suit the tool (how many, which) is left to
  the model: a ``FlightSearch`` with one argument is well formed but one the env rejects.

Which action, which words and how many are the model's choice, and what it learns. The forced
tokens (closing tag or bracket, the end of turn) have probability 1 under the constraint. Words
are plain tokens (not tags, chat markers or whitespace runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentgym._toolbox import require_choice, require_int
from agentgym.errors import ConfigError

__all__ = ["TagConstraint", "ReactConstraint"]


class TagConstraint:
    """Allow ``<tag> w1 .. wk </tag><eos>`` with ``tags[tag] = (min_words, max_words)``; the words
    are tokens seen earlier in the episode (``words="episode"``) or any plain token (``"vocab"``)."""

    def __init__(self, tokenizer: Any, tags: Mapping[str, tuple[int, int]], *, words: str = "episode") -> None:
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
        self.words = _Words(tokenizer, words, exclude=())

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
        words = self.words.of(prefix)
        if count >= high or not words:
            return [close]
        return words if count < low else [*words, close]


class ReactConstraint:
    """Allow ``Tool[w1 .. wk]<eos>`` for ``Tool`` in ``tools`` and ``1 <= k <= max_words``; the
    words are tokens seen earlier in the episode (``words="episode"``) or any plain token (``"vocab"``)."""

    def __init__(self, tokenizer: Any, tools: Sequence[str], *, max_words: int = 6, words: str = "episode") -> None:
        if not tools:
            raise ConfigError("tools", tools, "at least one tool name")
        require_int("max_words", max_words, low=1)
        self.eos, self.max_words = tokenizer.eos_token_id, max_words
        self.tools = [_one_token(tokenizer, "tools", name) for name in tools]
        self.open, self.close = (_one_token(tokenizer, "tokenizer", mark) for mark in "[]")
        self.words = _Words(tokenizer, words, exclude=(self.open, self.close))

    def allowed(self, prefix: Sequence[int], turn: Sequence[int]) -> list[int]:
        if not turn:
            return list(self.tools)
        if turn[-1] in (self.close, self.eos):
            return [self.eos]
        if len(turn) == 1:
            return [self.open]
        count, words = len(turn) - 2, self.words.of(prefix)
        if count >= self.max_words or not words:
            return [self.close]
        return words if count < 1 else [*words, self.close]


class _Words:
    """The plain tokens a constraint may write: those of the episode so far, or the whole vocabulary."""

    def __init__(self, tokenizer: Any, words: str, *, exclude: Sequence[int]) -> None:
        require_choice("words", words, ("episode", "vocab"))
        reserved = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values()) | set(exclude)
        spaces = {i for token, i in tokenizer.get_vocab().items() if not token.strip()}
        self.plain = sorted(set(range(len(tokenizer))) - reserved - spaces)
        self._plain_set, self.episode = set(self.plain), words == "episode"

    def of(self, prefix: Sequence[int]) -> list[int]:
        return sorted(self._plain_set.intersection(prefix)) if self.episode else self.plain


def _one_token(tokenizer: Any, field: str, text: str) -> int:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) != 1 or ids[0] == tokenizer.unk_token_id:
        raise ConfigError(field, text, "text the tokenizer keeps as one known token")
    return ids[0]
