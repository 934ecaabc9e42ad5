"""``pick_task``: the reset options that choose a task, for tasks that are objects or dicts."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym.core.tasks import pick_task
from agentgym.errors import ConfigError


def _read(task):
    return task


def _dicts(n):
    return [{"id": f"t-{i}", "text": f"task {i}"} for i in range(n)]


def test_an_unknown_id_among_dict_tasks_names_the_option_and_an_id():
    """It raised AttributeError: the error message read ``tasks[0].id`` of a dict."""
    tasks = _dicts(3)
    with pytest.raises(ConfigError) as refused:
        pick_task({"task_id": "nope"}, tasks, {t["id"]: i for i, t in enumerate(tasks)}, np.random.default_rng(0),
                  _read)
    assert refused.value.field == "task_id" and "'t-0'" in str(refused.value)


@pytest.mark.parametrize("options", [{}, {"task_index": 0}, {"task_id": "t-0"}])
def test_no_tasks_is_a_config_error_not_numpy_s_value_error(options):
    with pytest.raises(ConfigError) as refused:
        pick_task(options, [], {}, np.random.default_rng(0), _read)
    assert refused.value.field == "tasks"
    assert pick_task({"task": {"id": "x"}}, [], {}, np.random.default_rng(0), _read) == {"id": "x"}  # inline


_OPTION = st.one_of(
    st.fixed_dictionaries({}),
    st.fixed_dictionaries({"task_index": st.one_of(st.integers(-3, 8), st.text(max_size=3), st.none())}),
    st.fixed_dictionaries({"task_id": st.one_of(st.sampled_from(["t-0", "t-2", "nope"]), st.integers(),
                                                st.lists(st.integers(), max_size=2))}),
    st.fixed_dictionaries({"colour": st.integers()}),
)


@given(n=st.integers(0, 5), as_dicts=st.booleans(), options=_OPTION, seed=st.integers(0, 2**32 - 1))
def test_a_pick_is_a_loaded_task_or_a_config_error(n, as_dicts, options, seed):
    tasks = _dicts(n) if as_dicts else [SimpleNamespace(**t) for t in _dicts(n)]
    ids = {f"t-{i}": i for i in range(n)}
    try:
        picked = pick_task(options, tasks, ids, np.random.default_rng(seed), _read)
    except ConfigError as refused:
        assert refused.field in ("options", "tasks", "task_id", "task_index")
    else:
        assert any(picked is t for t in tasks)
        if options.get("task_id") in ids:
            assert picked is tasks[ids[options["task_id"]]]
