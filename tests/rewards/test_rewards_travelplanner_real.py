"""Planner-R1 presets on the real TravelPlanner train plans and their one-change variants."""

from __future__ import annotations

import json

import gymnasium
import pytest

import agentgym  # noqa: F401  (registers the env ids)
from agentgym import StepInfo
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD, evaluate
from agentgym.envs.travelplanner.plan import parse_plan
from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.scripted import gold_plan_actions
from agentgym.rewards import Episode, build_shaper

pytestmark = pytest.mark.realdata

PLANNER_PRESETS = ["planner_r1/sparse", "planner_r1/dense", {"preset": "planner_r1/curriculum", "total_steps": 300}]
CURRICULUM_STEPS = (0, 150, 250)
GATING = ("is_not_absent", "is_valid_information_in_sandbox")
LOCAL = {"valid_room_rule": "house_rule", "valid_cuisine": "cuisine", "valid_room_type": "room_type",
         "valid_transportation": "transportation"}


@pytest.fixture(scope="module")
def plan_rows(real_travelplanner):
    lines = (real_travelplanner / "plan_sets" / "train_variants.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def episode_for(row, world, env_evaluation="strict"):
    """The episode of an agent that submitted ``row``'s plan, as an env with ``env_evaluation`` reports it."""
    query = TravelTask.from_row(row["query"], id=row["id"])
    text = json.dumps(row["plan"])
    report = evaluate(parse_plan(text), query, world, evaluator=env_evaluation)  # the env reads model text leniently
    step = StepInfo(turn=1, action="answer", terminated_reason="answer", report=report.model_dump(mode="json"))
    return Episode([step], actions=[f"Finish[{text}]"], task=query, answer=text, outcome=float(report.final_pass),
                   evaluate=lambda plan, evaluation: evaluate(parse_plan(plan), query, world,
                                                              evaluator=evaluation).model_dump(mode="json"))


def _passes(row, world, evaluation):
    return evaluate(row["plan"], TravelTask.from_row(row["query"]), world, evaluator=evaluation).final_pass


def at_max(shaper, episode, step):
    result = shaper.shape(episode, training_step=step)
    maximum = sum(shaper.weights_at(step).values())
    return result.total == pytest.approx(maximum) and all(t.raw == 1.0 for t in result.terms.values())


def with_evaluation(spec, evaluation):
    doc = build_shaper(spec).spec.to_dict()
    for terms in [doc.get("terms")] + [s["terms"] for s in doc.get("stages", [])]:
        for term in terms or []:
            if term["kind"] != "schema":
                term["evaluator"] = evaluation
    return doc


@pytest.mark.parametrize("preset", PLANNER_PRESETS, ids=lambda p: p if isinstance(p, str) else p["preset"])
def test_annotated_train_plans_reach_the_maximum_of_every_preset(preset, plan_rows, real_world):
    annotated = plan_rows[:45]
    official = build_shaper(with_evaluation(preset, "official"))
    strict = build_shaper(preset)
    for row in annotated:
        for step in CURRICULUM_STEPS:
            assert at_max(official, episode_for(row, real_world, "official"), step), row["id"]
    # the strict evaluator closes loopholes some gold plans rely on; exactly the plans it passes reach the max
    strict_passes = 0
    for row in annotated:
        episode = episode_for(row, real_world, "official")  # re-evaluated with strict by the terms
        passes = evaluate(row["plan"], episode.task, real_world, evaluator="strict").final_pass
        strict_passes += passes
        assert at_max(strict, episode, 0) == passes, row["id"]
    assert strict_passes >= 40


def dependent_terms(constraint, query):
    """The terms a single failed constraint takes down, from the evaluator's rules."""
    group = ("commonsense_micro", "commonsense_macro") if constraint in COMMONSENSE else ("hard_micro", "hard_macro")
    terms = {constraint, "final_pass", *group}
    if constraint in GATING:  # these two gate the hard box: every applicable hard constraint fails with them
        local = query.local_constraint
        terms |= {"hard_micro", "hard_macro"} | {h for h in HARD if h not in LOCAL or getattr(local, LOCAL[h])}
    return terms


def test_a_plan_broken_in_one_constraint_loses_exactly_the_terms_that_depend_on_it(plan_rows, real_world):
    spec = {"terms": [{"kind": k, "weight": 1.0} for k in ("schema", "commonsense_micro", "hard_micro",
                                                          "commonsense_macro", "hard_macro", "final_pass")]
            + [{"kind": "constraint", "constraint": c, "weight": 1.0} for c in COMMONSENSE + HARD]}
    shaper = build_shaper(spec)
    originals = {row["query"]["query"]: row for row in plan_rows[:45]}
    checked = 0
    for variant in plan_rows[45:]:
        original = originals[variant["query"]["query"]]
        before, after = (episode_for(r, real_world) for r in (original, variant))
        failed = [name for name, v in after.report["commonsense"].items() if v["passed"] is False]
        failed += [name for name, v in (after.report["hard"] or {}).items() if v["passed"] is False]
        if not before.report["final_pass"] or len(failed) != 1 or after.report["hard"] is None \
                and failed[0] not in GATING:
            continue
        old, new = shaper.shape(before), shaper.shape(after)
        changed = {name for name in old.terms if old.terms[name].raw != new.terms[name].raw}
        assert changed == dependent_terms(failed[0], after.task), variant["id"]
        assert all(new.terms[name].raw < old.terms[name].raw for name in changed), variant["id"]
        assert new.total < old.total
        checked += 1
    assert checked >= 10


def test_travelplanner_env_pays_the_preset_through_the_reward_kwarg(real_travelplanner):
    env = gymnasium.make("TravelPlanner-v0", database=real_travelplanner, tasks="train", reward="planner_r1/dense")
    for index in range(0, 45, 4):
        env.reset(options={"task_index": index})
        query = env.unwrapped.task
        for action in gold_plan_actions(query):
            _, reward, terminated, truncated, info = env.step(action)
            if not (terminated or truncated):
                assert reward == 0.0 and "reward" not in info
        passed = info["report"]["final_pass"]
        assert info["reward"]["outcome"] == float(passed)
        contributions = sum(t["contribution"] for t in info["reward"]["terms"].values())
        assert reward == info["reward"]["total"] == pytest.approx(contributions)
        assert (reward == 5.0) == passed
        assert {k: v["raw"] for k, v in info["reward"]["terms"].items()}["final_pass"] == float(passed)


def test_terms_of_another_evaluation_than_the_env_re_evaluate_the_plan(real_travelplanner, plan_rows, real_world):
    # train query 42's gold plan passes the official evaluator, not the strict one
    index = next(i for i, row in enumerate(plan_rows[:45])
                 if _passes(row, real_world, "official") and not _passes(row, real_world, "strict"))
    env = gymnasium.make("TravelPlanner-v0", database=real_travelplanner, tasks="train", evaluator="official",
                         reward={"terms": [{"kind": "final_pass", "weight": 1.0},
                                           {"kind": "final_pass", "weight": 0.0, "evaluator": "official",
                                            "name": "official_pass"}]})
    env.reset(options={"task_index": index})
    for action in gold_plan_actions(env.unwrapped.task):
        *_, info = env.step(action)
    terms = info["reward"]["terms"]
    assert info["reward"]["outcome"] == 1.0  # the env's own (official) verdict
    assert terms["final_pass"]["raw"] == 0.0 and terms["official_pass"]["raw"] == 1.0
