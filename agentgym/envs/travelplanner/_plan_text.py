"""Reading the text fields of a plan: the official parsing rules and the strict ones.

Official rules (reimplemented from the documented behaviour of the official evaluator):

* route: the first ``from A to B`` in the text, ``A`` lazy, ``B`` running to the next comma
  (case-sensitive ``from``/``to``; ``(None, None)`` when absent);
* ``(State)`` suffix: everything before the first ``(...)`` group is kept, *not* stripped;
* ``"Name, City"``: the name is the text before the last comma, the city the text after it
  minus a ``(...)`` suffix, both stripped; without a comma both are ``'-'``.

These functions raise ``TypeError`` on non-string input, as the official ones do; the caller
turns that into an ``evaluation_error`` verdict. Results for strings are memoized, bounded in
bytes (a text too long to keep is computed each time).

Strict rules: routes and names are matched case-insensitively, whitespace is collapsed,
``(State)`` suffixes are removed wherever they appear, and nothing raises.

Plan fields are model text, so every function here runs in linear time on any string: the
strict rules are defined by the patterns in their docstrings and computed with non-backtracking
searches (a property test checks them against the patterns).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import Any, TypeVar

from agentgym._memo import memoize

__all__ = [
    "from_to", "before_paren", "name_city", "mode_of", "norm", "strict_route", "strict_route_in",
    "strict_name_city", "strict_pieces", "is_blank", "strip_suffix",
]

T = TypeVar("T")
_MEMO_BYTES = 8 << 20
_MEMO_ENTRY_BYTES = 4096

_FROM_TO = re.compile(r"from\s+(.+?)\s+to\s+([^,]+)(?=[,\s]|$)")
_PAREN = re.compile(r"^(.*?)\([^)]*\)")
_NAME_CITY = re.compile(r"(.*?),\s*([^,]+)(\(\w[\w\s]*\))?$")

# Pieces of the strict patterns, each matched at a known position or searched once.
_S_HEAD = re.compile(r"\s*+from(?=\s)", re.IGNORECASE)
_S_SPACE = re.compile(r"\s+")
# The last blank before a "to" that "\s+to\s+(.+?)" (DOTALL) / "\s+to\s+[^,;\n]" can match: a
# one-character search whose lookahead runs only where "to" follows, so linear.
_S_TO_ANY = re.compile(r"\s(?=to\s.)", re.IGNORECASE | re.DOTALL)
_S_TO_PLACE = re.compile(r"\s(?=to\s+[^,;\n])", re.IGNORECASE)
_S_TO_TAIL = re.compile(r"to\s+[^,;\n]", re.IGNORECASE)
_S_PLACE = re.compile(r"[^,;\n]+")
# Trailing "(...)" groups with their whitespace, read on the reversed text: one anchored match.
_S_SUFFIXES_REVERSED = re.compile(r"(?:\s*+\)[^()]*+\()*+")


def _memo(fn: Callable[[str], T]) -> Callable[[Any], T]:
    """A memo bounded in bytes. Non-string input still reaches ``fn`` (and raises there, as the
    official code does); unhashable input raises ``TypeError`` from the memo itself."""
    return memoize(_MEMO_BYTES, _MEMO_ENTRY_BYTES)(fn)


# -- official ---------------------------------------------------------------------------------
# The official patterns backtrack quadratically on long adversarial strings (a 30 kB field can
# take minutes). Short texts use the patterns themselves; longer ones use linear-time
# equivalents (``_*_linear``), which the tests check against the patterns on random strings.
_SHORT = 256


@_memo
def from_to(text: str) -> tuple[str | None, str | None]:
    """The official route extraction: ``(A, B)`` of the first ``from A to B``, else ``(None, None)``."""
    if len(text) > _SHORT:
        return _from_to_linear(text)
    m = _FROM_TO.search(text)
    return (m.group(1), m.group(2)) if m else (None, None)


@_memo
def before_paren(text: str) -> str:
    """The official suffix removal: text before the first ``(...)`` group, unstripped."""
    if len(text) > _SHORT:
        return _before_paren_linear(text)
    m = _PAREN.search(text)
    return m.group(1) if m else text


@_memo
def name_city(text: str) -> tuple[str, str]:
    """The official ``"Name, City"`` split; ``('-', '-')`` when it cannot be parsed."""
    # Strings take the string-method form at every length: equal to ``_NAME_CITY`` (a property
    # test checks it) and cheaper than the regex. Other input fails exactly as before.
    if len(text) > _SHORT or isinstance(text, str):
        return _name_city_linear(text)
    m = _NAME_CITY.search(text)
    if not m:
        return "-", "-"
    return m.group(1).strip(), before_paren(m.group(2).strip()).strip()


def _before_paren_linear(text: str) -> str:
    # ``^(.*?)\([^)]*\)``: the first "(" (no newline before it) with a ")" somewhere after it.
    p = text.find("(")
    if p < 0 or "\n" in text[:p] or text.find(")", p + 1) < 0:
        return text
    return text[:p]


def _name_city_linear(text: str) -> tuple[str, str]:
    # ``(.*?),\s*([^,]+)...$``: the last comma, with at least one character after it; the name
    # starts after the last newline before that comma (``.`` does not cross newlines).
    c = text.rfind(",")
    if c < 0 or c == len(text) - 1:
        return "-", "-"
    start = text.rfind("\n", 0, c) + 1
    return text[start:c].strip(), before_paren(text[c + 1:].strip()).strip()


def _from_to_linear(text: str) -> tuple[str | None, str | None]:
    """``from\\s+(.+?)\\s+to\\s+([^,]+)(?=[,\\s]|$)`` in one pass over whitespace runs."""
    n = len(text)
    runs = [(m.start(), m.end()) for m in re.finditer(r"\s+", text)]
    if not runs:
        return None, None
    starts = [r[0] for r in runs]
    run_end = {rs: re_ for rs, re_ in runs}
    good = [_good_to(text, re_, run_end) for _, re_ in runs]
    has_nl = ["\n" in text[rs:re_] for rs, re_ in runs]
    next_good, next_nl = [len(runs)] * (len(runs) + 1), [len(runs)] * (len(runs) + 1)
    for j in range(len(runs) - 1, -1, -1):
        next_good[j] = j if good[j] is not None else next_good[j + 1]
        next_nl[j] = j if has_nl[j] else next_nl[j + 1]
    i = text.find("from")
    while i >= 0:
        hit = _from_at(text, i + 4, n, runs, starts, run_end, good, next_good, next_nl)
        if hit is not None:
            return hit
        i = text.find("from", i + 1)
    return None, None


def _good_to(text: str, e: int, run_end: dict[int, int]) -> str | None:
    """Group 2 when ``to\\s+([^,]+)(?=[,\\s]|$)`` matches at ``e`` (right after a whitespace run)."""
    if not text.startswith("to", e):
        return None
    g = run_end.get(e + 2)
    if g is None:
        return None
    if g < len(text) and text[g] != ",":
        z = text.find(",", g)
        return text[g:] if z < 0 else text[g:z]
    return text[g - 1:g] if g - (e + 2) >= 2 else None


def _from_at(text, p, n, runs, starts, run_end, good, next_good, next_nl):
    r1e = run_end.get(p)
    if r1e is None:
        return None  # "from" not followed by whitespace
    if r1e < n:  # group 1 starts at the first non-space character: find the first usable " to "
        s = bisect.bisect_right(starts, r1e)
        j = next_good[s] if s < len(runs) else len(runs)
        if j < len(runs) and j <= next_nl[s]:
            return text[r1e:runs[j][0]], good[j]
    k1 = bisect.bisect_right(starts, p) - 1  # the run right after "from" (backtracking into it)
    if good[k1] is not None:
        for a in range(r1e - 2, p, -1):
            if text[a] != "\n":
                return text[a], good[k1]
    return None


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
@_memo
def norm(text: str) -> str:
    """Whitespace-collapsed, case-folded text: the key strict matching compares."""
    return " ".join(text.split()).casefold()


def is_blank(value: Any) -> bool:
    """Strict emptiness: None, '' or '-' (after stripping)."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "-"))


def strip_suffix(text: str) -> str:
    """Text without trailing ``(State)``-style groups, stripped: what removing
    ``\\s*\\([^()]*\\)\\s*$`` until nothing changes, then ``strip()``, gives."""
    run = _S_SUFFIXES_REVERSED.match(text[::-1]).end()
    return text[:len(text) - run].strip()


@_memo
def strict_route(text: str) -> tuple[str, str] | None:
    """``(A, B)`` when the whole text is ``from A to B`` (any case, ``(State)`` suffixes removed):
    ``re.fullmatch(r"\\s*from\\s+(.+?)\\s+to\\s+(.+?)\\s*", text, re.I | re.S)``."""
    head = _S_HEAD.match(text)
    if head is None:
        return None
    start = _S_SPACE.match(text, head.end()).end()  # group 1 starts after the whitespace run
    blank = _S_TO_ANY.search(text, start + 1)  # group 1 is lazy: the first " to " that can end it
    if blank is None:
        return None  # (the only other match puts whitespace in group 1, which is rejected anyway)
    # Trailing blanks of group 1 and leading ones of group 2 go in strip_suffix either way.
    return _pair(text[start:blank.start()], text[blank.end() + 2:])


@_memo
def strict_route_in(text: str) -> tuple[str, str] | None:
    """``(A, B)`` of the first ``from A to B`` inside a longer text (B ends at ``,``/``;``/newline):
    ``re.search(r"\\bfrom\\s+(.+?)\\s+to\\s+([^,;\\n]+)", text, re.I)``.

    The pattern tries every ``from``; this tries one per line at most: when the first usable
    " to " after a ``from`` lies past a newline, every ``from`` before that newline fails too."""
    folded = text.replace("\u0130", "?").lower()  # same indices as text (U+0130 lowers to two)
    pos = 0
    while (f := folded.find("from", pos)) >= 0:
        pos = f + 1
        if (f and (text[f - 1].isalnum() or text[f - 1] == "_")) or not text[f + 4:f + 5].isspace():
            continue  # not "\bfrom\s"
        start = _S_SPACE.match(text, f + 4).end()
        blank = _S_TO_PLACE.search(text, start + 1)
        run_start = blank and len(text[:blank.start()].rstrip())  # where the blanks before "to" begin
        if blank is not None and text.find("\n", start, run_start) < 0:
            return _pair(text[start:run_start], _place(text, blank.end() + 2))
        # Backtracking into the blanks after "from" when "to" follows them: group 1 is then one
        # blank character that is not a newline, so the match is rejected.
        if _S_TO_TAIL.match(text, start) and text[f + 5:start - 1].strip("\n"):
            return None
        if blank is None:
            return None  # no usable " to " after this "from", so none after any later one
        # Group 1 would cross a newline: skip to the "from" whose blanks hold the last one.
        last_newline = text.rfind("\n", start, run_start)
        pos = max(pos, len(text[:last_newline].rstrip()) - 4)
    return None


def _pair(a: str, b: str) -> tuple[str, str] | None:
    a, b = strip_suffix(a), strip_suffix(b)
    return (a, b) if a and b else None


def _place(text: str, pos: int) -> str:
    # "\s+([^,;\n]+)": greedy blanks, then the place up to the next , ; or newline. If the blanks
    # run into one of those, the place is blank (backtracking gives back spaces).
    end = _S_SPACE.match(text, pos).end()
    place = _S_PLACE.match(text, end)
    return place.group() if place else ""


@_memo
def strict_name_city(text: str) -> tuple[str, str] | None:
    """``(name, city)`` split at the last comma, stripped, city without ``(State)``; None without a comma."""
    name, sep, city = text.rpartition(",")
    if not sep:
        return None
    name, city = name.strip(), strip_suffix(city)
    return (name, city) if name and city else None


def strict_pieces(text: str) -> list[str]:
    """Attraction entries: every non-empty ``;``-separated piece, the last one included."""
    return [p.strip() for p in text.split(";") if p.strip() and p.strip() != "-"]
