"""The `official` evaluation where it used to depart from the upstream evaluator: empty venue names in cities
without rows, and plan shapes the official code never scores (it crashes on them).

Both are checked on a tiny synthetic world, so no real data is needed.
"""

from __future__ import annotations

import copy
import json

import gymnasium
import pytest

import agentgym  # noqa: F401 - registers the envs
from agentgym.envs.travelplanner.evaluation.submissions import run
from agentgym.envs.travelplanner.evaluation import ERROR_PREFIX, evaluate
from agentgym.envs.travelplanner.scripted import gold_plan_actions


@pytest.fixture(scope="module")
def gold(tiny_world):
    world, queries = tiny_world
    q = next(q for q in queries if q.annotated_plan and q.days >= 3)
    return world, q, [dict(d) for d in q.annotated_plan]


# -- empty venue names -------------------------------------------------------------------------
@pytest.mark.parametrize("field, text", [
    ("accommodation", ", Atlantis"),
    ("accommodation", ",Atlantis"),
    ("lunch", " , "),
    ("breakfast", ","),
    ("attraction", ", Atlantis;"),
])
def test_an_empty_name_in_a_city_without_rows_matches_nothing(gold, field, text) -> None:
    world, q, plan = gold
    plan = copy.deepcopy(plan)
    plan[0][field] = text
    report = evaluate(plan, q, world, evaluator="official")
    assert report.error is None, report.error
    assert report.commonsense["is_valid_information_in_sandbox"].passed is False
    if field == "accommodation":
        assert report.commonsense["is_valid_accommodation"].passed is True  # Minimum Nights is skipped


def test_an_empty_name_in_a_city_with_rows_matches_its_first_row(gold) -> None:
    """``str.contains("")`` is true for every row, as in pandas: the sandbox check passes."""
    world, q, plan = gold
    stay = next(d for d in plan if d.get("accommodation", "-") != "-")
    city = stay["accommodation"].rsplit(",", 1)[1].strip()
    stay["accommodation"] = f", {city}"
    report = evaluate(plan, q, world, evaluator="official")
    assert report.error is None and report.commonsense["is_valid_information_in_sandbox"].passed is True


# -- plan shapes ---------------------------------------------------------------------------------
def _shapes(plan, q):
    text = json.dumps(plan)
    return {
        "json string": text,
        "python literal string": repr(plan),
        "fenced string": f"```json\n{text}\n```",
        "answer-tagged string": f"<answer>{text}</answer>",
        "nested plan object": {"plan": plan},
        "annotated [meta, days]": [{"org": q.org, "dest": q.dest, "days": q.days}, plan],
        "an object without plan": {"days": plan},
    }


SHAPES = ["json string", "python literal string", "fenced string", "answer-tagged string", "nested plan object",
          "annotated [meta, days]", "an object without plan"]


@pytest.mark.parametrize("shape", SHAPES)
def test_official_mode_scores_only_a_list(gold, shape) -> None:
    world, q, plan = gold
    value = _shapes(plan, q)[shape]
    line = {"idx": 1, "query": q.text, "plan": value}
    # Passed directly, {"plan": [...]} is itself a submission line (scored); inside a line's "plan" it is not.
    for submitted in ([line] if shape == "nested plan object" else [value, line]):
        report = evaluate(submitted, q, world, evaluator="official")
        assert not report.delivered and not report.final_pass
        assert report.error and report.error.startswith(ERROR_PREFIX), report.error
    lenient = evaluate(value, q, world, evaluator="strict")
    assert lenient.delivered or shape == "an object without plan"


def test_official_mode_scores_a_list_and_a_submission_line(gold) -> None:
    world, q, plan = gold
    for submitted in (plan, tuple(plan), {"idx": 1, "query": q.text, "plan": plan}):
        report = evaluate(submitted, q, world, evaluator="official")
        assert report.delivered and report.error is None and report.final_pass


def test_the_cli_in_official_mode_counts_strings_as_not_delivered(gold, tmp_path) -> None:
    world, q, plan = gold
    sub = tmp_path / "plans.jsonl"
    rows = [{"idx": 1, "query": q.text, "plan": plan}, {"idx": 2, "query": q.text, "plan": json.dumps(plan)}]
    sub.write_text("\n".join(json.dumps(r) for r in rows))
    queries = tmp_path / "queries.jsonl"
    queries.write_text("\n".join(json.dumps({**r, "query": q.to_row()}) for r in rows))
    out = run(sub, tasks=str(queries), database=world.root, evaluator="official")
    delivered = [r.delivered for r in out["reports"]]
    assert delivered == [True, False]
    assert out["reports"][1].error.startswith(ERROR_PREFIX)
    strict = run(sub, tasks=str(queries), database=world.root, evaluator="strict")
    assert [r.delivered for r in strict["reports"]] == [True, True]


def test_the_env_still_reads_model_text_leniently_in_official_evaluation(tiny_world) -> None:
    world, _ = tiny_world
    env = gymnasium.make("TravelPlanner-v0", database=world.root, evaluator="official", max_turns=60)
    env.reset(options={"task_index": 0})
    unwrapped = env.unwrapped
    actions = gold_plan_actions(unwrapped.task, unwrapped.action_format, tools=False)
    finish = actions[-1]
    assert finish.startswith("Finish[")
    fenced = "Finish[```json\n" + finish[len("Finish["):-1] + "\n```]"
    _, reward, terminated, _, info = env.step(fenced)
    assert terminated and info["report"]["delivered"] and info["report"]["evaluator"] == "official"
    assert reward == 1.0
