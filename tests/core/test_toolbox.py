"""The shared toolbox: bounded text for messages that never raises, and strict int checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym import ConfigError
from agentgym._toolbox import clip, is_int, is_number, plain, require_int, short

ANY_VALUE = st.one_of(st.text(), st.integers(), st.floats(), st.booleans(), st.none(),
                      st.lists(st.integers(), max_size=50), st.dictionaries(st.text(max_size=5), st.integers()))


@given(st.text(max_size=500), st.integers(min_value=0, max_value=300))
def test_clip_keeps_short_text_and_says_how_much_it_cut(text, limit):
    out = clip(text, limit)
    assert out == text if len(text) <= limit else out.startswith(text[:limit]) and f"({len(text) - limit} more" in out


@given(ANY_VALUE)
def test_short_is_bounded_for_any_value(value):
    assert len(short(value, 80)) <= 80 + len("... (99999999 more characters)")


def test_short_never_raises_on_an_int_repr_refuses():
    huge = 10 ** 5000  # repr() raises ValueError past 4,300 digits
    with pytest.raises(ValueError):
        repr(huge)
    assert "bits" in short(huge)


@given(ANY_VALUE)
def test_is_int_refuses_bools_and_non_ints(value):
    assert is_int(value) == (type(value) is int)


def test_is_number_refuses_bools_and_non_finite():
    assert is_number(1) and is_number(2.5)
    assert not any(is_number(v) for v in (True, float("nan"), float("inf"), "1", None))


def test_require_int_names_the_field_and_the_range():
    assert require_int("top_k", 3, low=1, high=50) == 3
    for bad in (0, 51, True, 2.0, "3"):
        with pytest.raises(ConfigError, match="top_k.*an int >= 1 and <= 50"):
            require_int("top_k", bad, low=1, high=50)


def test_plain_unwraps_numpy_scalars_only():
    np = pytest.importorskip("numpy")
    assert plain(np.int64(3)) == 3 and type(plain(np.int64(3))) is int
    assert plain(np.array(2.5)) == 2.5
    row = {"a": 1}
    assert plain(row) is row
