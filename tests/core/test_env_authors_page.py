"""The env-author page's example (docs/env-authors.md) is a working env: under 100 lines, it passes
Gymnasium's and agentgym's checkers, a correct answer scores, and a bad action is an error code."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from agentgym.testing import check_text_env

PAGE = Path(__file__).resolve().parents[2] / "docs" / "env-authors.md"


@pytest.fixture(scope="module")
def calc(tmp_path_factory):
    code = re.search(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.M | re.S)[1]
    assert len(code.splitlines()) < 100
    folder = tmp_path_factory.mktemp("calc")
    (folder / "calc_env.py").write_text(code, encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("calc_env")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("calc_env", None)
        gymnasium.registry.pop("Calculator-v0", None)


def test_it_passes_both_checkers(calc):
    check_env(gymnasium.make("Calculator-v0").unwrapped, skip_render_check=True)
    check_text_env("Calculator-v0", ["Calculate[3 * 4]", "Calculate[1 // 0]", "Finish[12]"], fuzz=100)


def test_a_correct_answer_scores_and_a_wrong_one_does_not(calc):
    env = gymnasium.make("Calculator-v0")
    for i, task in enumerate(env.unwrapped.tasks):
        env.reset(options={"task_index": i})
        boxes, per_box, loose = (int(w) for w in re.findall(r"\d+", task["text"]))
        observation, *_ = env.step(f"Calculate[{boxes} * {per_box} + {loose}]")
        _, reward, terminated, _, info = env.step(f"Finish[{observation}]")
        assert (reward, terminated, info["answer"]) == (1.0, True, str(task["answer"]))
    env.reset(options={"task_index": 0})
    assert env.step("Finish[-1]")[1:3] == (0.0, True)


@pytest.mark.parametrize(("action", "code"), [
    ("", "empty_action"), ("Calculate[(2 +", "unparseable_action"), ("Divide[4, 2]", "unknown_tool"),
    ("Calculate[2 ** 99999]", "invalid_argument"), ("Calculate[7 // 0]", "invalid_argument"),
    ("Calculate[" + "9" * 200 + "]", "invalid_argument"), ("x" * 3000, "action_too_long"),
])
def test_a_bad_action_is_an_error_code_not_an_exception(calc, action, code):
    env = gymnasium.make("Calculator-v0")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(action)
    assert info["error"]["code"] == code and info["task_id"] and (reward, terminated) == (0.0, False)


@pytest.mark.parametrize(("kwargs", "options", "field"), [
    ({}, {"task_id": "nope"}, "task_id"),  # was an AttributeError: the message read tasks[0].id of a dict
    ({"n_tasks": 0}, None, "tasks"),  # was numpy's bare ValueError
    ({}, {"task_index": 20}, "task_index"), ({}, {"task": "2 + 2"}, "task"), ({}, {"colour": 1}, "options"),
])
def test_the_user_s_mistakes_are_config_errors_naming_the_field(calc, kwargs, options, field):
    from agentgym.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        gymnasium.make("Calculator-v0", **kwargs).reset(options=options)
    assert refused.value.field == field


def test_what_it_declares_is_what_the_trainers_and_reward_terms_read(calc):
    from agentgym.core import TurnCut
    from agentgym.errors import ConfigError
    from agentgym.rewards import ShapeReward

    env = gymnasium.make("Calculator-v0")
    assert TurnCut.of(env).end("Calculate[2 * 3] then more") == len("Calculate[2 * 3]")
    with pytest.raises(ConfigError, match="travelplanner"):
        ShapeReward(env, "planner_r1/dense")
    shaped = ShapeReward(gymnasium.make("Calculator-v0"), {"terms": [{"kind": "exact_match", "weight": 1.0}]})
    shaped.reset(seed=0, options={"task_index": 0})
    assert shaped.step(f"Finish[{shaped.unwrapped.task['answer']}]")[1] == 1.0
