"""One word for the evaluator choice: ``evaluator`` (glossary), the older names still read.

``evaluate(evaluator=)``, ``TravelPlanner-v0``'s ``evaluator=``, ``agentgym eval travelplanner --evaluator``,
``EvaluationReport.evaluator`` and ``Metrics.evaluator``; the solver's distinct choice is ``must_pass``.
The 0.1 names (``evaluation``; ``mode`` from 0.1.0: ``--mode``, a term's ``mode:``, a logged report's
``"mode"`` key) keep working for one release, with a warning.
"""

from __future__ import annotations

import json

import gymnasium
import pytest
from typer.testing import CliRunner

import agentgym  # noqa: F401  (registers the env ids)
from agentgym import StepInfo
from agentgym.cli import app
from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.envs.travelplanner.evaluation import EVALUATORS, EvaluationReport, aggregate, evaluate
from agentgym.errors import ConfigError
from agentgym.rewards import Episode, load_spec

runner = CliRunner()


@pytest.fixture(scope="module")
def submission(tiny_world, tmp_path_factory):
    """Three gold plans of the tiny world, each line carrying its task (no --tasks needed)."""
    world, queries = tiny_world
    path = tmp_path_factory.mktemp("vocab") / "plans.jsonl"
    path.write_text("".join(json.dumps({"query": q.to_row(), "plan": list(q.annotated_plan)}) + "\n"
                            for q in queries[:3]))
    return world, path


def _eval(world, path, out, *flags):
    return runner.invoke(app, ["eval", "travelplanner", "-s", str(path), "-d", str(world.root), "-o", str(out),
                               *flags])


@pytest.mark.parametrize("evaluator", EVALUATORS)
@pytest.mark.parametrize("old_flag", ["--evaluation", "--mode"])
def test_eval_evaluation_and_mode_are_deprecated_aliases_of_evaluator(submission, tmp_path, evaluator, old_flag):
    world, path = submission
    new = _eval(world, path, tmp_path / "new.json", "--evaluator", evaluator)
    old = _eval(world, path, tmp_path / "old.json", old_flag, evaluator)
    assert new.exit_code == 0 and old.exit_code == 0, new.output + old.output
    assert "deprecated" not in new.stderr
    assert f"deprecated: {old_flag} is now --evaluator" in " ".join(old.stderr.split())
    data = json.loads((tmp_path / "new.json").read_text())
    assert data["evaluator"] == evaluator and "mode" not in data and "evaluation" not in data
    assert (tmp_path / "old.json").read_text() == (tmp_path / "new.json").read_text()
    assert f"TravelPlanner ({evaluator} evaluator, 3 tasks)" in new.stdout


def test_eval_defaults_to_official_and_refuses_two_different_choices(submission, tmp_path):
    world, path = submission
    assert _eval(world, path, tmp_path / "d.json").exit_code == 0
    assert json.loads((tmp_path / "d.json").read_text())["evaluator"] == "official"
    for old in ("--mode", "--evaluation"):
        both = _eval(world, path, tmp_path / "x.json", old, "official", "--evaluator", "strict")
        assert both.exit_code == 2 and "give only one" in both.output
    bad = _eval(world, path, tmp_path / "x.json", "--evaluator", "lenient")
    assert bad.exit_code == 2 and "'lenient' is not an evaluator; use one of official, strict" in " ".join(
        bad.output.split())
    shown = runner.invoke(app, ["eval", "travelplanner", "--help"]).output
    assert "--evaluator" in shown and "--mode" not in shown and "--evaluation" not in shown


def test_solve_must_pass_keeps_mode_as_a_deprecated_alias(tiny_world, tmp_path):
    world, queries = tiny_world
    rows = tmp_path / "q.jsonl"
    rows.write_text("".join(json.dumps(q.to_row()) + "\n" for q in queries[:2]))
    outputs = []
    for flags in (["--must-pass", "strict"], ["--mode", "strict"], ["-m", "strict"]):
        out = tmp_path / f"sub{len(outputs)}.jsonl"
        result = runner.invoke(app, ["travelplanner", "solve", "-t", str(rows), "-d", str(world.root), "-o", str(out),
                                     *flags])
        assert result.exit_code == 0, result.output
        assert ("deprecated: --mode is now --must-pass" in " ".join(result.stderr.split())) == (flags[0] != "--must-pass")
        outputs.append(out.read_text())
    assert outputs[0] == outputs[1] == outputs[2]
    shown = runner.invoke(app, ["travelplanner", "solve", "--help"]).output
    assert "--must-pass" in shown and "--mode" not in shown


@pytest.mark.parametrize("key", ["mode", "evaluation"])
def test_a_terms_mode_or_evaluation_is_read_as_its_evaluator_with_a_warning(key):
    from agentgym._deprecated import AgentGymDeprecationWarning

    with pytest.warns(AgentGymDeprecationWarning, match=f"'{key}' is deprecated, use 'evaluator'"):
        old = load_spec({"terms": [{"kind": "final_pass", "weight": 1, key: "official"}]})
    new = load_spec({"terms": [{"kind": "final_pass", "weight": 1, "evaluator": "official"}]})
    assert old == new and old.terms[0].evaluator == "official"
    assert new.to_dict()["terms"][0] == {"kind": "final_pass", "weight": 1.0, "evaluator": "official"}
    with pytest.raises(ConfigError) as caught:  # both names at once: they could disagree
        load_spec({"terms": [{"kind": "final_pass", "weight": 1, key: "official", "evaluator": "strict"}]})
    assert caught.value.field == f"terms[0].{key}"


@pytest.mark.parametrize("old_key", ["mode", "evaluation"])
def test_reports_logged_with_mode_or_evaluation_still_load(tiny_world, old_key):
    world, queries = tiny_world
    q = queries[0]
    report = evaluate(list(q.annotated_plan), q, world, evaluator="strict")
    dumped = report.model_dump(mode="json")
    assert dumped["evaluator"] == "strict" and "mode" not in dumped and "evaluation" not in dumped
    old = {old_key: dumped.pop("evaluator"), **dumped}
    assert EvaluationReport.model_validate(old) == report
    metrics = aggregate([report], [q])
    assert metrics.evaluator == "strict"
    old_metrics = {old_key: "strict", **metrics.model_dump(mode="json", exclude={"evaluator"})}
    assert type(metrics).model_validate(old_metrics).evaluator == "strict"


def test_the_old_evaluation_names_work_and_warn(tiny_world):
    world, queries = tiny_world
    q = queries[0]
    with pytest.warns(AgentGymDeprecationWarning, match="'evaluation'"):
        report = evaluate(list(q.annotated_plan), q, world, evaluation="strict")
    assert report == evaluate(list(q.annotated_plan), q, world, evaluator="strict")
    with pytest.warns(AgentGymDeprecationWarning, match="'query'"):
        assert evaluate(list(q.annotated_plan), query=q, world=world) == evaluate(list(q.annotated_plan), q, world)
    with pytest.warns(AgentGymDeprecationWarning, match="EvaluationReport.evaluation"):
        assert report.evaluation == "strict"
    with pytest.warns(AgentGymDeprecationWarning, match="Metrics.evaluation"):
        assert aggregate([report], [q]).evaluation == "strict"
    import agentgym.envs.travelplanner.evaluation as module

    with pytest.warns(AgentGymDeprecationWarning, match="EVALUATIONS"):
        assert module.EVALUATIONS == EVALUATORS
    with pytest.warns(AgentGymDeprecationWarning, match="'evaluation'"):
        env = gymnasium.make("TravelPlanner-v0", database=world, evaluation="official")
    assert env.unwrapped.evaluator == "official"
    with pytest.warns(AgentGymDeprecationWarning, match="TravelPlannerEnv.evaluation"):
        assert env.unwrapped.evaluation == "official"


def test_an_episode_logged_with_mode_is_shaped_like_one_logged_with_evaluation(tiny_world):
    """An old log's report says ``"mode"``; terms of that evaluator read it, the others re-evaluate."""
    world, queries = tiny_world
    q = queries[0]
    calls = []

    def reevaluate(plan, evaluator):
        calls.append(evaluator)
        return evaluate(list(q.annotated_plan), q, world, evaluator=evaluator).model_dump(mode="json")

    new = evaluate(list(q.annotated_plan), q, world, evaluator="official").model_dump(mode="json")
    old = {"mode": new.pop("evaluator"), **new}
    step = StepInfo(turn=1, action="answer", terminated_reason="answer", answer="plan", report=old)
    episode = Episode([step], actions=["Finish[plan]"], task=q, evaluate=reevaluate)
    assert episode.report_for("official") is episode.report and calls == []
    assert episode.report_for("strict")["evaluator"] == "strict" and calls == ["strict"]


def test_the_env_checks_its_evaluator_against_the_evaluators_list():
    with pytest.raises(ConfigError) as caught:
        gymnasium.make("TravelPlanner-v0", evaluator="lenient")
    assert caught.value.field == "evaluator" and all(e in str(caught.value) for e in EVALUATORS)

