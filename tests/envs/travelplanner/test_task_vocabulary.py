"""TravelPlanner's scoring and world tools say task, not query (glossary), and the 0.1 names still work.

``agentgym eval travelplanner --tasks/--foreign-tasks``, ``agentgym travelplanner solve --tasks``,
``submissions.run(tasks=, foreign_tasks=)``, ``MetricSet.n_tasks`` and
``WorldScale.min_restaurants_per_task_cuisine``: each old spelling works for one release, with a warning.
Written files keep their names: the submission's ``{"idx", "query", "plan"}`` (the benchmark's) and the
``--output`` JSON's ``queries``/``n_queries`` keys (0.1's, which users' files already have).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.cli import app
from agentgym.envs.travelplanner.evaluation import Metrics, aggregate, evaluate
from agentgym.envs.travelplanner.evaluation.submissions import run, to_json
from agentgym.envs.travelplanner.synthetic import SCALE_PRESETS, WorldScale
from agentgym.errors import ConfigError

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tiny_world, tmp_path_factory):
    """A task file of three tiny-world tasks and a submission of their gold plans (official format)."""
    world, tasks = tiny_world
    folder = tmp_path_factory.mktemp("task-words")
    task_file, submission = folder / "tasks.jsonl", folder / "plans.jsonl"
    task_file.write_text("".join(json.dumps(t.to_row()) + "\n" for t in tasks[:3]))
    submission.write_text("".join(json.dumps({"idx": i + 1, "query": t.text, "plan": list(t.annotated_plan)}) + "\n"
                                  for i, t in enumerate(tasks[:3])))
    return world, task_file, submission


def _eval(world, submission, out, *flags):
    return runner.invoke(app, ["eval", "travelplanner", "-s", str(submission), "-d", str(world.root),
                               "-o", str(out), *flags])


@pytest.mark.parametrize("old_flag", ["--queries", "-q"])
def test_eval_queries_is_a_deprecated_alias_of_tasks(files, tmp_path, old_flag):
    world, task_file, submission = files
    new = _eval(world, submission, tmp_path / "new.json", "--tasks", str(task_file))
    old = _eval(world, submission, tmp_path / "old.json", old_flag, str(task_file))
    assert new.exit_code == old.exit_code == 0, new.output + old.output
    assert "deprecated" not in new.stderr and "--queries is now --tasks" in " ".join(old.stderr.split())
    assert (tmp_path / "old.json").read_text() == (tmp_path / "new.json").read_text()
    assert "3 tasks)" in new.stdout
    both = _eval(world, submission, tmp_path / "x.json", "--queries", str(task_file), "--tasks", "train")
    assert both.exit_code == 2 and "give only one" in both.output
    shown = runner.invoke(app, ["eval", "travelplanner", "--help"]).output
    assert "--tasks" in shown and "--foreign-tasks" in shown and "--queries" not in shown


def test_eval_foreign_queries_is_a_deprecated_alias_of_foreign_tasks(files, tmp_path):
    world, task_file, submission = files
    new = _eval(world, submission, tmp_path / "new.json", "--tasks", str(task_file), "--foreign-tasks")
    old = _eval(world, submission, tmp_path / "old.json", "--tasks", str(task_file), "--foreign-queries")
    assert new.exit_code == old.exit_code == 0, new.output + old.output
    assert "deprecated" not in new.stderr
    assert "--foreign-queries is now --foreign-tasks" in " ".join(old.stderr.split())
    assert (tmp_path / "old.json").read_text() == (tmp_path / "new.json").read_text()


@pytest.mark.parametrize("old_flag", ["--queries", "-q"])
def test_solve_queries_is_a_deprecated_alias_of_tasks(files, tmp_path, old_flag):
    world, task_file, _ = files
    outputs = []
    for flag in ("--tasks", old_flag):
        out = tmp_path / f"{len(outputs)}.jsonl"
        result = runner.invoke(app, ["travelplanner", "solve", flag, str(task_file), "-d", str(world.root),
                                     "-o", str(out)])
        assert result.exit_code == 0, result.output
        assert ("--queries is now --tasks" in " ".join(result.stderr.split())) == (flag == old_flag)
        outputs.append(out.read_text())
    assert outputs[0] == outputs[1]
    assert [set(json.loads(line)) for line in outputs[0].splitlines()] == [{"idx", "query", "plan"}] * 3
    missing = runner.invoke(app, ["travelplanner", "solve", "-d", str(world.root), "-o", str(tmp_path / "x")])
    assert missing.exit_code == 2 and "--tasks" in missing.output
    shown = runner.invoke(app, ["travelplanner", "solve", "--help"]).output
    assert "--tasks" in shown and "--queries" not in shown


def test_run_takes_its_old_keyword_names_with_a_warning(files):
    world, task_file, submission = files
    new = run(submission, tasks=str(task_file), database=world.root, foreign_tasks=True)
    with pytest.warns(AgentGymDeprecationWarning, match=r"run\(\) kwarg 'queries'"):
        old = run(submission, queries=str(task_file), database=world.root, foreign_tasks=True)
    assert to_json(old) == to_json(new)
    with pytest.warns(AgentGymDeprecationWarning, match=r"run\(\) kwarg 'foreign_queries'"):
        assert to_json(run(submission, tasks=str(task_file), database=world.root, foreign_queries=True)) == to_json(new)
    with pytest.raises(ConfigError, match="only one of 'queries'"):
        run(submission, queries=str(task_file), tasks=str(task_file), database=world.root)


def test_the_output_file_keeps_its_0_1_keys(files):
    world, task_file, submission = files
    data = to_json(run(submission, tasks=str(task_file), database=world.root))
    assert data["queries"] == str(task_file) and data["counts"]["n_queries"] == 3 and "n_tasks" not in data["counts"]
    assert all(group["n_queries"] >= 1 for group in [*data["by_level"].values(), *data["by_days"].values()])


def test_metrics_count_tasks_and_old_dumps_still_load(tiny_world):
    world, tasks = tiny_world
    metrics = aggregate([evaluate(list(t.annotated_plan), t, world) for t in tasks[:3]], tasks[:3])
    assert metrics.n_tasks == 3 and "n_queries" not in metrics.model_dump()
    with pytest.warns(AgentGymDeprecationWarning, match="Metrics.n_queries"):
        assert metrics.n_queries == 3
    group = next(iter(metrics.by_level.values()))
    with pytest.warns(AgentGymDeprecationWarning, match="MetricSet.n_queries"):
        assert group.n_queries == group.n_tasks
    dumped = json.loads(metrics.model_dump_json())
    old = json.loads(json.dumps(dumped).replace('"n_tasks"', '"n_queries"'))  # a 0.1 dump, groups included
    assert Metrics.model_validate(old) == metrics == Metrics.model_validate(dumped)


def test_world_scale_takes_its_old_field_name_with_a_warning():
    fields = SCALE_PRESETS["tiny"].model_dump()
    fields["min_restaurants_per_query_cuisine"] = fields.pop("min_restaurants_per_task_cuisine")
    with pytest.warns(AgentGymDeprecationWarning, match="'min_restaurants_per_query_cuisine'") as caught:
        scale = WorldScale(**fields)
    assert caught[0].filename == __file__  # the warning points at the caller
    assert scale == SCALE_PRESETS["tiny"] and scale.min_restaurants_per_task_cuisine == 2
    with pytest.warns(AgentGymDeprecationWarning, match="WorldScale.min_restaurants_per_query_cuisine"):
        assert scale.min_restaurants_per_query_cuisine == 2
    # pydantic reports it, as it does any other bad WorldScale field
    with pytest.raises(ValueError, match="only one of 'min_restaurants_per_query_cuisine'"):
        WorldScale(**fields, min_restaurants_per_task_cuisine=2)



@pytest.mark.parametrize("name", ["solver_actions", "plan_actions", "gold_plan_actions", "hard_denominator"])
def test_functions_that_take_a_task_call_it_task_and_still_take_query(tiny_world, name):
    """Defect: four public functions took the task as ``query``; the old keyword warns for one release."""
    import inspect

    from agentgym.envs.travelplanner import evaluation, scripted

    world, tasks = tiny_world
    task = tasks[0]
    function = getattr(scripted, name, None) or getattr(evaluation, name)
    assert next(iter(inspect.signature(function).parameters)) == "task"
    others = {"solver_actions": {"world": world}, "plan_actions": {"plan": task.annotated_plan}}.get(name, {})
    new = function(task=task, **others)
    with pytest.warns(AgentGymDeprecationWarning, match="'query' is deprecated, use 'task'"):
        assert function(query=task, **others) == new
