"""The shared toolbox: bounded text for messages that never raises, and strict int checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym import ConfigError
from agentgym._toolbox import clip, closest, is_int, is_number, nearest_key, plain, require_int, short

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


TREE = {"trainer": {"total_epochs": 1, "total_training_steps": None, "nnodes": 1},
        "data": {"train_files": None, "max_prompt_length": 1},
        "env": {"kwargs": None}}  # None: a free-form leaf that takes keys of its own


def test_nearest_key_says_which_key_an_override_typo_meant():
    assert nearest_key("trainer.total_epoch", TREE) == "trainer.total_epochs"
    assert nearest_key("trainr.total_epochs", TREE) == "trainer.total_epochs"
    assert nearest_key("data.max_prompt_lenght", TREE) == "data.max_prompt_length"
    assert nearest_key("envv.kwargs.top_k", TREE) == "env.kwargs.top_k"  # below a free-form leaf, as typed
    assert nearest_key("trainer.total_epochs", TREE) is None  # nothing to correct
    assert nearest_key("env.kwargs.anything", TREE) is None
    assert nearest_key("trainer.zzzqqq", TREE) is None and nearest_key("", TREE) is None


_PATHS = st.lists(st.sampled_from(["trainer", "total_epochs", "x", "data", "lr", "max_steps", "train", "nodes"]),
                  min_size=1, max_size=4).map(".".join)


@given(_PATHS | st.text(max_size=40))
def test_nearest_key_suggests_only_keys_that_exist(key):
    meant = nearest_key(key, TREE)
    node = TREE
    for part in meant.split(".") if meant else ():
        if not isinstance(node, dict):  # below a free-form leaf: the user's own keys
            break
        assert part in node, (key, meant)
        node = node[part]


def test_closest_is_bounded_for_huge_names():
    assert closest("max_step", ["max_steps", "seed"]) == "max_steps"
    assert closest("x" * 10_000, ["x" * 10_000]) is None  # no quadratic difflib on a megabyte of text
