"""The reward= kwarg and the ShapeReward wrapper on TravelPlanner-v0 (embedded synthetic world)."""

from __future__ import annotations

import pickle
import warnings

import gymnasium
import pytest
import yaml
from gymnasium.utils.env_checker import check_env

import agentgym  # noqa: F401  (registers the env ids)
from agentgym import ConfigError
from agentgym.envs.travelplanner.env import TravelPlannerEnv
from agentgym.envs.travelplanner.scripted import gold_plan_actions
from agentgym.rewards import ShapeReward

CURRICULUM = {"preset": "planner_r1/curriculum", "total_steps": 300}


def play(env, options=None, actions=None):
    """Reset, replay the query's reference plan (or ``actions``); return every step's result."""
    env.reset(seed=3, options=options)
    steps = []
    for action in actions or gold_plan_actions(env.unwrapped.task):
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    return steps


def test_env_checker_passes_with_a_shaped_reward():
    check_env(gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense").unwrapped, skip_render_check=True)


def test_the_reward_is_paid_on_the_last_step_with_its_breakdown():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        steps = play(gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense"), {"training_step": 7})
    assert all(r == 0.0 and "reward" not in info for _, r, _, _, info in steps[:-1])
    _, reward, terminated, _, info = steps[-1]
    breakdown = info["reward"]
    assert terminated and reward == breakdown["total"] == 5.0  # schema gates the five other terms
    assert breakdown["outcome"] == 1.0 and breakdown["training_step"] == 7
    assert set(breakdown["terms"]) == {"schema", "commonsense_micro", "hard_micro", "commonsense_macro",
                                       "hard_macro", "final_pass"}
    assert info["report"]["final_pass"] is True  # the env's own info is kept


def test_without_reward_the_env_keeps_its_own_reward():
    *_, (_, reward, _, _, info) = play(gymnasium.make("TravelPlanner-v0"))
    assert reward == 1.0 and "reward" not in info
    with pytest.raises(AttributeError):  # no ShapeReward in the stack: the env itself has no reward code
        gymnasium.make("TravelPlanner-v0").get_wrapper_attr("shaper")


def test_the_reward_kwarg_is_applied_by_wrapping_at_make_time():
    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense")
    assert isinstance(env.env.env, ShapeReward) and not hasattr(env.unwrapped, "shaper")
    with pytest.raises(ConfigError, match="^reward="):
        TravelPlannerEnv(reward="planner_r1/dense")  # the class takes no reward: make() wraps it


def test_the_wrapper_and_the_kwarg_give_the_same_breakdown():
    kwarg = play(gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense"))[-1]
    wrapped = play(ShapeReward(gymnasium.make("TravelPlanner-v0"), "planner_r1/dense"))[-1]
    assert kwarg[1] == wrapped[1] and kwarg[4]["reward"] == wrapped[4]["reward"]


def test_one_shaper_only():
    with pytest.raises(ConfigError, match="^reward="):
        ShapeReward(gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense"), "planner_r1/sparse")


def test_reset_options_set_the_training_step_and_the_run_length():
    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/curriculum", total_steps=10)  # the reset's wins
    stages = [play(env, {"training_step": s, "total_steps": 300})[-1][4]["reward"] for s in (0, 120, 299)]
    assert [b["stage"] for b in stages] == ["dense", "macro", "sparse"]
    assert [b["total"] for b in stages] == [5.0, 3.0, 1.0]
    assert stages[2]["terms"]["schema"] == {"raw": 1.0, "weight": 0.0, "contribution": 0.0, "abstained": False,
                                            "reason": None, "failure": None}


def test_a_schedule_in_fractions_of_the_run_without_a_run_length_is_refused_at_make():
    """Defect: ``make(reward="planner_r1/curriculum")`` built, and raised only at the first reset()."""
    with pytest.raises(ConfigError, match=r"^total_steps=None .*total_steps=T.*'total_steps': T.*ShapeReward"):
        gymnasium.make("TravelPlanner-v0", reward="planner_r1/curriculum")
    with pytest.raises(ConfigError, match="^total_steps=3 .*reward="):
        gymnasium.make("TravelPlanner-v0", total_steps=3)  # a run length without a reward
    with pytest.raises(ConfigError, match="^total_steps="):
        gymnasium.make("TravelPlanner-v0", reward="planner_r1/curriculum", total_steps=0)


@pytest.mark.parametrize("make", [
    lambda: gymnasium.make("TravelPlanner-v0", reward="planner_r1/curriculum", total_steps=300),
    lambda: gymnasium.make("TravelPlanner-v0", reward=CURRICULUM),
    lambda: ShapeReward(gymnasium.make("TravelPlanner-v0"), "planner_r1/curriculum", total_steps=300),
])
def test_each_way_of_giving_the_run_length_follows_the_curriculum(make):
    """The run length from make, the spec or the wrapper holds when a reset gives only the step."""
    env = make()
    assert [play(env, {"training_step": s})[-1][4]["reward"]["stage"] for s in (0, 120, 299)] == \
        ["dense", "macro", "sparse"]


def test_the_per_reset_clock_of_trainers_still_works_with_the_wrapper():
    """verl's agent loop and the env server wrap the env and send the run length with each reset."""
    env = ShapeReward(gymnasium.make("TravelPlanner-v0"), "planner_r1/curriculum")
    with pytest.raises(ConfigError, match="^total_steps=None"):
        env.reset(seed=0)  # no clock yet: refused before the episode, never at its last step
    assert play(env, {"training_step": 120, "total_steps": 300})[-1][4]["reward"]["stage"] == "macro"


def test_set_training_step_on_the_wrapper():
    env = gymnasium.make("TravelPlanner-v0", reward=CURRICULUM)
    env.get_wrapper_attr("set_training_step")(250)
    assert play(env)[-1][4]["reward"]["stage"] == "sparse"
    wrapped = ShapeReward(gymnasium.make("TravelPlanner-v0"), CURRICULUM)
    wrapped.set_training_step(100)
    assert play(wrapped)[-1][4]["reward"]["stage"] == "macro"


@pytest.mark.parametrize(("options", "field"), [({"training_step": -1}, "training_step"),
                                                 ({"training_step": "3"}, "training_step"),
                                                 ({"training_step": 3, "total_steps": 0}, "total_steps"),
                                                 ({"total_steps": 10}, "options")])
def test_bad_training_steps_are_config_errors(options, field):
    with pytest.raises(ConfigError, match=f"^{field}="):
        gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense").reset(options=options)


def test_a_truncated_episode_is_shaped_like_an_undelivered_plan():
    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense", max_turns=2)
    steps = play(env, actions=["CitySearch[Texas]", "CitySearch[Ohio]"])
    _, reward, terminated, truncated, info = steps[-1]
    assert truncated and not terminated and reward == 0.0
    terms = info["reward"]["terms"]
    assert terms["schema"]["raw"] == 0.0  # no plan: the schema gate closes every other term
    assert all(t["contribution"] == 0.0 and t["reason"].startswith("gated off") for n, t in terms.items() if n != "schema")


def test_giving_up_and_a_broken_plan_earn_nothing_for_content():
    env = gymnasium.make("TravelPlanner-v0", reward={"terms": [{"kind": "final_pass", "weight": 1.0},
                                                                {"kind": "format", "weight": 0.1}]})
    gave_up = play(env, actions=["GiveUp[too hard]"])[-1][4]["reward"]["terms"]
    assert gave_up["final_pass"] == {"raw": 0.0, "weight": 1.0, "contribution": 0.0, "abstained": False,
                                     "reason": "guard: no answer was submitted", "failure": None}
    assert gave_up["format"]["raw"] == 0.0  # the episode did not end with an answer
    broken = play(env, actions=["Finish[not a plan]"])[-1][4]["reward"]["terms"]
    assert broken["final_pass"]["raw"] == 0.0 and broken["final_pass"]["reason"] is None
    assert broken["format"]["raw"] == 1.0  # well formed, wrong content


def test_a_spec_file_names_the_reward(tmp_path):
    path = tmp_path / "reward.yaml"
    path.write_text(yaml.safe_dump({"name": "mine", "terms": [{"kind": "final_pass", "weight": 2.0},
                                                              {"kind": "num_turns", "weight": 0.01,
                                                               "penalty": True}]}))
    env = gymnasium.make("TravelPlanner-v0", reward=str(path))
    steps = play(env)
    assert env.get_wrapper_attr("shaper").spec.name == "mine"
    assert steps[-1][1] == pytest.approx(2.0 - 0.01 * len(steps))


def test_a_shaping_env_pickles_mid_episode():
    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense")
    env.reset(seed=3, options={"training_step": 4})
    actions = gold_plan_actions(env.unwrapped.task)
    env.step(actions[0])
    clone = pickle.loads(pickle.dumps(env))

    def finish(e):
        return [e.step(a) for a in actions[1:]][-1][4]["reward"]

    original = finish(env)
    assert finish(clone) == original and original["training_step"] == 4 and original["total"] == 5.0


def test_an_unknown_preset_fails_at_make_time():
    with pytest.raises(ConfigError, match="^reward='planner_r1/dens' is not allowed"):
        gymnasium.make("TravelPlanner-v0", reward="planner_r1/dens")


class _CopyInfo(gymnasium.Wrapper):
    """A wrapper that hands on a copy of each info dict (so it is not the env's own)."""

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, {**info, "added": 1}


def test_the_wrapper_reads_the_env_s_own_step_records_without_parsing_them(monkeypatch):
    from agentgym.core.types import StepInfo

    parsed = []
    original = StepInfo.model_validate.__func__
    monkeypatch.setattr(StepInfo, "model_validate",
                        classmethod(lambda cls, *a, **k: parsed.append(1) or original(cls, *a, **k)))
    direct = play(gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense"))
    assert parsed == []  # every step's StepInfo came from the env, none was read back from its dict
    copied = play(ShapeReward(_CopyInfo(TravelPlannerEnv()), "planner_r1/dense"))
    assert len(parsed) == len(copied)  # a dict the env did not make is read, as before
    assert copied[-1][4]["reward"] == direct[-1][4]["reward"]


def test_an_env_knows_only_the_info_dict_it_returned_last():
    env = TravelPlannerEnv()
    _, info = env.reset(seed=3)
    assert env.step_info_of(info).turn == 0 and env.step_info_of(dict(info)) is None
    _, _, _, _, second = env.step(gold_plan_actions(env.task)[0])
    assert env.step_info_of(second).turn == 1 and env.step_info_of(info) is None
