"""The strict plan-text rules are computed without backtracking: same results as the patterns.

The patterns below are the strict rules as first written (they backtrack quadratically or worse on
long fields: ``"from" + " " * 4000`` took minutes); ``_plan_text`` now computes them in linear
time, and these properties check it agrees with the patterns on random short strings.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentgym.envs.travelplanner import _plan_text as pt

_ROUTE_FULL = re.compile(r"\s*from\s+(.+?)\s+to\s+(.+?)\s*", re.IGNORECASE | re.DOTALL)
_ROUTE_IN = re.compile(r"\bfrom\s+(.+?)\s+to\s+([^,;\n]+)", re.IGNORECASE)
_SUFFIX = re.compile(r"\s*\([^()]*\)\s*$")


def _strip_suffix(text: str) -> str:
    prev = None
    while prev != text:
        prev, text = text, _SUFFIX.sub("", text)
    return text.strip()


def _pair(m: re.Match[str] | None) -> tuple[str, str] | None:
    if not m:
        return None
    a, b = _strip_suffix(m.group(1)), _strip_suffix(m.group(2))
    return (a, b) if a and b else None


_PIECES = st.sampled_from(["from", "FROM", "to", "To", " ", "  ", "\n", "\t", "a", "Bo", "(", ")", "(NY)",
                           ",", ";", "x(y)", "afrom", "tom"])
_TEXT = st.lists(_PIECES, max_size=14).map("".join)


@settings(max_examples=600, deadline=None)
@given(_TEXT)
@example("from   to x")
@example("from \n to x")
@example("from a \n to b")
@example("from a\nto b, from c to d")
@example("from  \t to x, from a to b")
@example("(a)(b)\n")
def test_strict_rules_match_the_patterns(text):
    assert pt.strip_suffix(text) == _strip_suffix(text)
    assert pt.strict_route.__wrapped__(text) == _pair(_ROUTE_FULL.fullmatch(text))
    assert pt.strict_route_in.__wrapped__(text) == _pair(_ROUTE_IN.search(text))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=" \n\t()abfromtTO,;", max_size=40))
def test_strict_rules_match_the_patterns_on_any_characters(text):
    assert pt.strip_suffix(text) == _strip_suffix(text)
    assert pt.strict_route.__wrapped__(text) == _pair(_ROUTE_FULL.fullmatch(text))
    assert pt.strict_route_in.__wrapped__(text) == _pair(_ROUTE_IN.search(text))


_BLANK = st.sampled_from([" ", "  ", "\n", " \n ", "\t"])
_WORD = st.sampled_from(["a", "Bo", "(NY)", "x(y)", ",", ";", "from", "to", "a,b", "_from", "b;", "", "(a)(b)"])
_ROUTES = st.lists(st.tuples(_WORD, _BLANK, st.just("from"), _BLANK, _WORD, _BLANK,
                             st.sampled_from(["to", "TO", "t"]), _BLANK, _WORD).map("".join),
                   min_size=1, max_size=3).map("".join)


@settings(max_examples=400, deadline=None)
@given(_ROUTES)
def test_strict_routes_match_the_patterns_on_route_like_text(text):
    assert pt.strict_route.__wrapped__(text) == _pair(_ROUTE_FULL.fullmatch(text))
    assert pt.strict_route_in.__wrapped__(text) == _pair(_ROUTE_IN.search(text))
