"""Search-R1's cut of long observations: by tokens of the policy's tokenizer, or by an estimate.

Search-R1 truncates each observation to its first ``max_obs_length`` tokens (500 by default)
before appending it to the rollout. With a tokenizer the env does the same. Without one it counts
tokens the way a large byte-level BPE splits English text (``estimate_tokens``): one token per word
of up to 7 letters (its leading space included) and one more per 5 further letters, one per digit,
one per 2 punctuation characters, one per 4 whitespace characters (a single space is free);
other scripts one per 2 letters. On the wiki-18 sample's top-3 observations the cut lands within 2% of a
500-token cut on average (``benchmarks/searchqa_observation_cut.py``; docs/performance.md).
"""

from __future__ import annotations

import re
from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled

__all__ = ["ObservationCutter", "estimate_tokens", "cut_to_estimate"]

# Runs of one class each (letters, one digit, whitespace, punctuation, underscores): no
# alternative can backtrack into another, so finditer is linear in the text.
_PIECE = re.compile(r"[^\W\d_]+|\d|\s+|[^\w\s]+|_+")
_WORD_LETTERS, _MORE_LETTERS = 7, 5


def _piece_tokens(piece: str) -> int:
    first = piece[0]
    if first.isspace():
        return 0 if piece == " " else -(-len(piece) // 4)  # a single space joins the next word's token
    if first.isdigit():
        return 1
    if first.isalpha():
        if not piece.isascii():
            return -(-len(piece) // 2)
        return 1 + max(0, -(-(len(piece) - _WORD_LETTERS) // _MORE_LETTERS))
    return -(-len(piece) // 2)


def estimate_tokens(text: str) -> int:
    """About how many tokens a large byte-level BPE makes of ``text`` (module docstring)."""
    return sum(_piece_tokens(m.group()) for m in _PIECE.finditer(text))


def cut_to_estimate(text: str, max_tokens: int) -> str:
    """``text`` cut where ``estimate_tokens`` passes ``max_tokens`` (inside a piece longer than what is left)."""
    used = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        tokens = _piece_tokens(piece)
        if used + tokens > max_tokens:
            return text[:match.start() + _chars_within(piece, max_tokens - used)]
        used += tokens
    return text


def _chars_within(piece: str, tokens: int) -> int:
    """How much of ``piece`` fits in ``tokens`` estimated tokens (the inverse of ``_piece_tokens``)."""
    if tokens <= 0 or piece[0].isdigit():
        return 0
    if piece[0].isspace():
        return 4 * tokens
    if piece[0].isalpha() and piece.isascii():
        return _WORD_LETTERS + (tokens - 1) * _MORE_LETTERS
    return 2 * tokens


class ObservationCutter:
    """``cutter(text)``: ``text`` cut to ``max_tokens`` tokens of ``tokenizer`` (a tokenizer, a name or a path)."""

    def __init__(self, tokenizer: Any, max_tokens: int) -> None:
        if tokenizer is not None and not isinstance(tokenizer, str) and not (
                callable(getattr(tokenizer, "encode", None)) and callable(getattr(tokenizer, "decode", None))):
            raise ConfigError("tokenizer", type(tokenizer).__name__,
                              "None, a Hugging Face tokenizer, or its name or local path")
        self._spec, self._tokenizer, self.max_tokens = tokenizer, None, max_tokens

    @property
    def tokenizer(self) -> Any:
        """The tokenizer, loaded on first use when it was given by name or path."""
        if self._tokenizer is None and self._spec is not None:
            self._tokenizer = _load(self._spec) if isinstance(self._spec, str) else self._spec
        return self._tokenizer

    def __call__(self, text: str) -> str:
        if self._spec is None:
            return cut_to_estimate(text, self.max_tokens)
        tokenizer = self.tokenizer
        ids = tokenizer.encode(text, add_special_tokens=False)  # no shortcut: a byte-level token can be < 1 char
        if len(ids) <= self.max_tokens:
            return text
        return tokenizer.decode(ids[:self.max_tokens])

    def __getstate__(self) -> dict[str, Any]:
        # A tokenizer named by path is loaded again in the copy; an object is carried along.
        return {"_spec": self._spec, "_tokenizer": None if isinstance(self._spec, str) else self._tokenizer,
                "max_tokens": self.max_tokens}


def _load(name: str) -> Any:
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise DependencyNotInstalled("tokenizer= by name needs transformers: pip install 'agentgym-rl[dense]'") from None
    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise ConfigError("tokenizer", name, f"a tokenizer name or local path transformers can load ({exc})") from None
