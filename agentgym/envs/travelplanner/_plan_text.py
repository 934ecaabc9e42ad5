"""Reading the text fields of a plan: the official parsing rules and the strict ones.

Official rules (reimplemented from the documented behaviour of the official evaluator):

* route: the first ``from A to B`` in the text, ``A`` lazy, ``B`` running to the next comma
  (case-sensitive ``from``/``to``; ``(None, None)`` when absent);
* ``(State)`` suffix: everything before the first ``(...)`` group is kept, *not* stripped;
* ``"Name, City"``: the name is the text before the last comma, the city the text after it
  minus a ``(...)`` suffix, both stripped; without a comma both are ``'-'``.

These functions raise ``TypeError`` on non-string input, as the official ones do; the caller
turns that into an ``evaluation_error`` verdict. Results for strings are memoized (bounded).

Strict rules: routes and names are matched case-insensitively, whitespace is collapsed,
``(State)`` suffixes are removed wherever they appear, and nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "from_to", "before_paren", "name_city", "mode_of", "norm", "strict_route", "strict_route_in",
    "strict_name_city", "strict_pieces", "is_blank",
]

T = TypeVar("T")
_MEMO_LIMIT = 100_000

_FROM_TO = re.compile(r"from\s+(.+?)\s+to\s+([^,]+)(?=[,\s]|$)")
_PAREN = re.compile(r"^(.*?)\([^)]*\)")
_NAME_CITY = re.compile(r"(.*?),\s*([^,]+)(\(\w[\w\s]*\))?$")

_S_ROUTE_FULL = re.compile(r"\s*from\s+(.+?)\s+to\s+(.+?)\s*", re.IGNORECASE | re.DOTALL)
_S_ROUTE_IN = re.compile(r"\bfrom\s+(.+?)\s+to\s+([^,;\n]+)", re.IGNORECASE)
_S_SUFFIX = re.compile(r"\s*\([^()]*\)\s*$")


def _memo(fn: Callable[[str], T]) -> Callable[[Any], T]:
    cache: dict[str, T] = {}

    def lookup(text: Any) -> T:
        if type(text) is not str:
            return fn(text)  # raises like the official code on non-strings
        try:
            return cache[text]
        except KeyError:
            pass
        if len(cache) >= _MEMO_LIMIT:
            cache.clear()
        value = cache[text] = fn(text)
        return value

    lookup.cache_clear = cache.clear  # type: ignore[attr-defined]
    return lookup


# -- official ---------------------------------------------------------------------------------
@_memo
def from_to(text: str) -> tuple[str | None, str | None]:
    """The official route extraction: ``(A, B)`` of the first ``from A to B``, else ``(None, None)``."""
    m = _FROM_TO.search(text)
    return (m.group(1), m.group(2)) if m else (None, None)


@_memo
def before_paren(text: str) -> str:
    """The official suffix removal: text before the first ``(...)`` group, unstripped."""
    m = _PAREN.search(text)
    return m.group(1) if m else text


@_memo
def name_city(text: str) -> tuple[str, str]:
    """The official ``"Name, City"`` split; ``('-', '-')`` when it cannot be parsed."""
    m = _NAME_CITY.search(text)
    if not m:
        return "-", "-"
    return m.group(1).strip(), before_paren(m.group(2).strip()).strip()


def mode_of(text: str) -> str | None:
    """The official mode classification (lowercase substring): taxi, then self-driving, then flight."""
    low = text.lower()
    if "taxi" in low:
        return "Taxi"
    if "self-driving" in low:
        return "Self-driving"
    if "flight" in low:
        return "Flight"
    return None


# -- strict -----------------------------------------------------------------------------------
def norm(text: str) -> str:
    """Whitespace-collapsed, case-folded text: the key strict matching compares."""
    return " ".join(text.split()).casefold()


def is_blank(value: Any) -> bool:
    """Strict emptiness: None, '' or '-' (after stripping)."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "-"))


def _strip_suffix(text: str) -> str:
    prev = None
    while prev != text:
        prev, text = text, _S_SUFFIX.sub("", text)
    return text.strip()


@_memo
def strict_route(text: str) -> tuple[str, str] | None:
    """``(A, B)`` when the whole text is ``from A to B`` (any case, ``(State)`` suffixes removed)."""
    m = _S_ROUTE_FULL.fullmatch(text)
    if not m:
        return None
    a, b = _strip_suffix(m.group(1)), _strip_suffix(m.group(2))
    return (a, b) if a and b else None


@_memo
def strict_route_in(text: str) -> tuple[str, str] | None:
    """``(A, B)`` of the first ``from A to B`` inside a longer text (B ends at ``,``/``;``/newline)."""
    m = _S_ROUTE_IN.search(text)
    if not m:
        return None
    a, b = _strip_suffix(m.group(1)), _strip_suffix(m.group(2))
    return (a, b) if a and b else None


@_memo
def strict_name_city(text: str) -> tuple[str, str] | None:
    """``(name, city)`` split at the last comma, stripped, city without ``(State)``; None without a comma."""
    name, sep, city = text.rpartition(",")
    if not sep:
        return None
    name, city = name.strip(), _strip_suffix(city)
    return (name, city) if name and city else None


def strict_pieces(text: str) -> list[str]:
    """Attraction entries: every non-empty ``;``-separated piece, the last one included."""
    return [p.strip() for p in text.split(";") if p.strip() and p.strip() != "-"]
