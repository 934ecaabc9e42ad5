"""Search-R1's cut of long observations: by tokens of the policy's tokenizer, or by characters.

Search-R1 truncates each observation to its first ``max_obs_length`` tokens (500 by default)
before appending it to the rollout. With a tokenizer the env does the same; without one it keeps
``4 * max_tokens`` characters, about as much English text.
"""

from __future__ import annotations

from typing import Any

from agentgym.errors import ConfigError, DependencyNotInstalled

__all__ = ["ObservationCutter", "CHARS_PER_TOKEN"]

CHARS_PER_TOKEN = 4


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
        limit = self.max_tokens * CHARS_PER_TOKEN
        if self._spec is None:
            return text[:limit]
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
        raise DependencyNotInstalled("tokenizer= by name needs transformers: pip install 'agentgym[dense]'") from None
    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise ConfigError("tokenizer", name, f"a tokenizer name or local path transformers can load ({exc})") from None
