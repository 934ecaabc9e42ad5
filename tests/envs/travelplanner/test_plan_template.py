"""The plan template (``plan_template``): every plan it lets a model write is one the evaluator
reads in full, the reference plan is among them, and a random one almost never passes."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.envs.travelplanner.plan_template import plan_template
from agentgym.errors import ConfigError

TASKS = range(4)  # the first train tasks: 3 days, one city, budget only


@pytest.fixture(scope="module")
def env():
    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense", max_turns=1)
    yield env
    env.close()


def _templates(env):
    out = {}
    for index in TASKS:
        env.reset(options={"task_index": index})
        out[index] = plan_template(env.unwrapped.task, env.unwrapped.world, per_slot=4, seed=index)
    return out


@pytest.fixture(scope="module")
def templates(env):
    return _templates(env)


def _write(parts, picks):
    """The text of one walk through the template: ``picks`` chooses each slot's text."""
    picks = iter(picks)
    return "".join(part if isinstance(part, str) else part[next(picks) % len(part)] for part in parts)


def _play(env, index, text):
    env.reset(options={"task_index": index})
    _, reward, terminated, _, info = env.step(text)
    assert terminated
    return reward, info["report"], {name: term["raw"] for name, term in info["reward"]["terms"].items()}


@settings(max_examples=40, deadline=None)
@given(index=st.sampled_from(list(TASKS)), picks=st.lists(st.integers(0, 99), min_size=16, max_size=16))
def test_every_plan_the_template_writes_is_read_in_full(env, templates, index, picks):
    """Whatever the model picks, the plan parses into the schema, names only what the database
    holds, in the day's city, with every required entry: only the model's choices can fail it."""
    _, report, terms = _play(env, index, _write(templates[index], picks))
    assert terms["schema"] == 1.0 and report["delivered"]
    for check in ("is_valid_information_in_sandbox", "is_valid_information_in_current_city", "is_not_absent",
                  "is_reasonable_visiting_city"):
        assert report["commonsense"][check]["passed"], (check, report["commonsense"][check])
    assert report["hard_applicable"] >= 1  # the hard constraints were checked


def _one_attraction(day):
    first = day["attraction"].split(";")[0]
    return {**day, "attraction": first + ";" if first.strip() not in ("", "-") else "-"}


def test_the_reference_plan_is_one_of_its_plans_and_passes(env, templates):
    """The reference plan (with one attraction a day, as the template writes them) is a walk."""
    for index, parts in templates.items():
        reference = [_one_attraction(day) for day in env.unwrapped.tasks[index].annotated_plan[:3]]
        text = "Finish[" + json.dumps(reference) + "]"
        slots = [part for part in parts if not isinstance(part, str)]
        picks, at = [], 0
        for part in parts:  # the reference's entry at each slot, read off the reference's own text
            if isinstance(part, str):
                assert text.startswith(part, at), (part, text[at:at + 80])
                at += len(part)
            else:
                choice = next(i for i, option in enumerate(part) if text.startswith(option, at))
                picks.append(choice)
                at += len(part[choice])
        assert at == len(text) and len(picks) == len(slots)
        reward, report, _ = _play(env, index, _write(parts, picks))
        assert report["final_pass"] and reward == 5.0


def test_a_random_plan_almost_never_passes(env, templates):
    """What makes the sparse reward sparse: uniform picks pass at most a few times in a thousand,
    and fail the budget most of the time (measured: 5 passes in 800, hard micro 0.02)."""
    rng = np.random.default_rng(0)
    passes, hard = 0, []
    for index, parts in templates.items():
        for _ in range(200):
            _, report, terms = _play(env, index, _write(parts, rng.integers(0, 100, size=16)))
            passes += report["final_pass"]
            hard.append(terms["hard_micro"])
    assert passes <= 8
    assert np.mean(hard) < 0.2


def test_templates_are_fixed_by_the_seed_and_refuse_what_they_cannot_shape(env, templates):
    assert _templates(env) == templates
    env.reset(options={"task_index": 5})  # a 5-day trip through two cities
    with pytest.raises(ConfigError, match="one-city task"):
        plan_template(env.unwrapped.task, env.unwrapped.world)
