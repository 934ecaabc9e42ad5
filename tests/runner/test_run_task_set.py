"""``--tasks`` is the task set in every command (a split or a task file, the env kwarg ``tasks=``);
``agentgym run`` picks among them with ``--selection index|seed``. Before, ``run --tasks validation``
was refused with "should be 'index' or 'seed'"; the old ``--tasks index|seed`` still works, with a note."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.cli import app
from agentgym.runner import RunConfig, default_out_dir, load_results

ARGS = ["run", "TravelPlanner-v0", "--agent", "gold", "--episodes", "2", "--quiet", "--no-plot"]


def _run(*args: str):
    return CliRunner().invoke(app, [*ARGS, *args], terminal_width=200)


def _identity(out) -> dict:
    return json.loads((out / "run.json").read_text())["identity"]


def test_tasks_names_the_task_set_as_in_eval_and_solve(tmp_path):
    result = _run("--tasks", "validation", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert _identity(tmp_path)["env_kwargs"] == {"tasks": "validation"}
    assert _identity(tmp_path)["selection"] == "index"
    assert all(r["success"] for r in load_results(tmp_path / "results.jsonl").values())
    validation = [r["task_id"] for r in load_results(tmp_path / "results.jsonl").values()]
    train = CliRunner().invoke(app, [*ARGS, "--out", str(tmp_path / "train")], terminal_width=200)
    assert train.exit_code == 0 and validation != [r["task_id"] for r in
                                                  load_results(tmp_path / "train" / "results.jsonl").values()]


def test_a_task_file_is_a_task_set_too(tmp_path):
    from agentgym.envs.travelplanner.synthetic import default_world_path

    lines = (default_world_path() / "queries" / "test.jsonl").read_text().splitlines()[:2]
    (tmp_path / "two.jsonl").write_text("\n".join(lines) + "\n")
    result = _run("--tasks", str(tmp_path / "two.jsonl"), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert len(load_results(tmp_path / "out" / "results.jsonl")) == 2


def test_tasks_and_the_same_env_kwarg_are_refused_together(tmp_path):
    result = _run("--tasks", "validation", "-k", "tasks=train", "--out", str(tmp_path))
    assert result.exit_code == 2 and "--tasks and -k tasks= name the same kwarg" in result.output


def test_the_old_spelling_of_the_selection_still_works_with_a_note(tmp_path):
    result = CliRunner().invoke(app, [*ARGS, "--tasks", "seed", "--out", str(tmp_path)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "--tasks seed is now --selection seed" in " ".join(result.output.split())
    assert _identity(tmp_path)["selection"] == "seed" and _identity(tmp_path)["env_kwargs"] == {}
    clash = _run("--tasks", "seed", "--selection", "index", "--out", str(tmp_path / "b"))
    assert clash.exit_code == 2 and "give only --selection" in clash.output


def test_a_run_recorded_with_tasks_in_its_manifest_resumes(tmp_path):
    assert _run("--selection", "seed", "--episodes", "1", "--out", str(tmp_path)).exit_code == 0
    manifest = tmp_path / "run.json"
    body = json.loads(manifest.read_text())
    body["identity"] = {("tasks" if k == "selection" else k): v for k, v in body["identity"].items()}
    manifest.write_text(json.dumps(body))  # as the old spelling wrote it
    result = _run("--selection", "seed", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert len(load_results(tmp_path / "results.jsonl")) == 2


def test_run_config_and_default_out_dir_take_the_old_keyword_with_a_warning(tmp_path):
    with pytest.warns(AgentGymDeprecationWarning, match="'tasks'.*'selection'"):
        config = RunConfig.model_validate({"env_id": "TravelPlanner-v0", "agent": {"kind": "gold"}, "episodes": 1,
                                           "out": str(tmp_path), "tasks": "seed"})
    assert config.selection == "seed"
    with pytest.warns(AgentGymDeprecationWarning):
        old = default_out_dir("TravelPlanner-v0", "m", None, tasks="seed")
    assert old == default_out_dir("TravelPlanner-v0", "m", None, selection="seed")
    assert old.name.endswith("__tasks-seed")  # the folder such runs wrote: they resume
