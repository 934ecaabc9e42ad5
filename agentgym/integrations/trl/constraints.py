"""``TurnConstraint``s for tag and ReAct actions: sampling restricted to well-formed turns.

A random or tiny model almost never writes a well-formed action by chance, so nothing rewards it
and nothing is learned. The constraints let it choose only among well-formed turns:

* ``TagConstraint``: an opening tag, then 1..n words taken from the episode so far (its
  question, the passages it read), then the closing tag and the end-of-turn token;
* ``ReactConstraint``: a tool name, ``[``, 1..n words of the episode, ``]`` and the end-of-turn
  token (``CitySearch[Texas]``). Whether the arguments suit the tool (how many, which) is left to
  the model: a ``FlightSearch`` with one argument is well formed but one the env rejects;
* ``TemplateConstraint``: a template's text, with a choice among a few texts at each of its slots
  (a TravelPlanner plan: ``agentgym.envs.travelplanner.plan_template``).

Which action, which words and how many are the model's choice, and what it learns. The forced
tokens (closing tag or bracket, the end of turn) have probability 1 under the constraint. Words
are plain tokens (not tags, chat markers or whitespace runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentgym._toolbox import require_choice, require_int
from agentgym.errors import ConfigError

__all__ = ["TagConstraint", "ReactConstraint", "TemplateConstraint"]


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


Part = str | tuple[str, ...]
"""A piece of a template: literal text (written as is), or a slot (the model picks one of its texts)."""


class TemplateConstraint:
    """Allow exactly the texts a template spells: its literal parts as they are and, at each slot,
    one of the slot's texts (the model's choice), then the end-of-turn token.

    ``templates`` maps a marker (a text of the episode's prompt, e.g. its task's query) to the
    template's parts; an episode whose prompt holds no marker is not constrained. Every part must
    be text the tokenizer writes exactly (each is tokenized on its own, and its tokens decode back to it)."""

    _MEMO = 1 << 16  # walked turns kept (a batch's turns grow one token per call)

    def __init__(self, tokenizer: Any, templates: Mapping[str, Sequence[Part]]) -> None:
        if not templates:
            raise ConfigError("templates", templates, "at least one {marker: parts} template")
        self.eos, self.decode = tokenizer.eos_token_id, tokenizer.decode
        self.templates = {marker: [_compile(tokenizer, part) for part in parts] for marker, parts in templates.items()}
        for parts in self.templates.values():
            _check_unambiguous(parts)
        self._by_prefix: dict[tuple[int, ...], str | None] = {}
        self._walked: dict[tuple[str, tuple[int, ...]], tuple[int, Any]] = {}

    def allowed(self, prefix: Sequence[int], turn: Sequence[int]) -> list[int] | None:
        marker = self._marker(prefix)
        if marker is None:
            return None
        parts = self.templates[marker]
        index, node = self._walk(marker, tuple(turn))
        if index == len(parts):
            return [self.eos]
        if isinstance(node, int):  # inside a literal: its next token
            return [parts[index][node]]
        valid = list(node.children)
        if node.complete:  # a slot's text may end here: the next part may start
            valid += _first_tokens(parts, index + 1) or [self.eos]
        return valid

    def _marker(self, prefix: Sequence[int]) -> str | None:
        key = tuple(prefix)
        if key not in self._by_prefix:
            if len(self._by_prefix) > 1024:
                self._by_prefix.clear()
            text = self.decode(list(prefix))
            self._by_prefix[key] = next((m for m in self.templates if m in text), None)
        return self._by_prefix[key]

    def _walk(self, marker: str, turn: tuple[int, ...]) -> tuple[int, Any]:
        """(part index, position in a literal or node of a slot's trie) after ``turn``."""
        key = (marker, turn)
        state = self._walked.get(key)
        if state is None:
            parts = self.templates[marker]
            before = self._walked.get((marker, turn[:-1])) if turn else None
            if before is not None:
                state = _step(parts, before, turn[-1])
            else:  # replay the turn from its start
                state = (0, _start(parts, 0))
                for token in turn:
                    state = _step(parts, state, token)
            if len(self._walked) > self._MEMO:
                self._walked.clear()
            self._walked[key] = state
        return state


def _step(parts: list[Any], state: tuple[int, Any], token: int) -> tuple[int, Any]:
    """The state after ``token``: a literal moves on by one; a slot follows its trie, and ends
    where its text is complete and ``token`` does not continue it (``token`` then starts the next part)."""
    index, node = state
    if index == len(parts):
        return state
    if not isinstance(node, int) and token not in node.children:
        index, node = index + 1, _start(parts, index + 1)
        if index == len(parts):
            return index, None
    if isinstance(node, int):
        node += 1
        done = node == len(parts[index])
    else:
        node = node.children[token]
        done = not node.children
    return (index + 1, _start(parts, index + 1)) if done else (index, node)


class _Slot:
    """A slot's texts as a token trie (``complete``: a text ends here)."""

    def __init__(self) -> None:
        self.children: dict[int, _Slot] = {}
        self.complete = False


def _compile(tokenizer: Any, part: Part) -> Any:
    texts = [part] if isinstance(part, str) else list(part)
    if not texts or any(not isinstance(t, str) or not t for t in texts):
        raise ConfigError("templates", part, "a non-empty text or a non-empty tuple of non-empty texts")
    encoded = []
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if tokenizer.decode(ids) != text:
            raise ConfigError("templates", text, "text the tokenizer writes exactly (train it on the template's texts)")
        encoded.append(ids)
    if isinstance(part, str):
        return encoded[0]
    root = _Slot()
    for ids in encoded:
        node = root
        for token in ids:
            node = node.children.setdefault(token, _Slot())
        node.complete = True
    return root


def _check_unambiguous(parts: list[Any]) -> None:
    """A slot text that another one continues must not be followed by a token that continues it."""
    for index, part in enumerate(parts):
        if isinstance(part, list):
            continue
        follow = set(_first_tokens(parts, index + 1))
        nodes = [part]
        while nodes:
            node = nodes.pop()
            if node.complete and follow & set(node.children):
                raise ConfigError("templates", index, "slots whose texts end where the next part cannot be "
                                  "mistaken for more of them")
            nodes.extend(node.children.values())


def _first_tokens(parts: list[Any], index: int) -> list[int]:
    if index >= len(parts):
        return []
    part = parts[index]
    return [part[0]] if isinstance(part, list) else list(part.children)


def _start(parts: list[Any], index: int) -> Any:
    if index >= len(parts):
        return None
    return 0 if isinstance(parts[index], list) else parts[index]
