"""Retired spellings of the task words (queries, questions, query_index...) still work for one release,
each with an ``AgentGymDeprecationWarning`` (glossary: a task, never a query or a question)."""

from __future__ import annotations

import importlib

import gymnasium
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym._deprecated import AgentGymDeprecationWarning
from agentgym.errors import ConfigError

SMALL_QA = {"synthetic_size": "small"}


def test_old_env_kwargs_work_and_warn():
    with pytest.warns(AgentGymDeprecationWarning, match="'queries'"):
        env = gymnasium.make("TravelPlanner-v0", queries="validation")
    assert env.unwrapped.tasks[0].id == "validation-0"
    with pytest.warns(AgentGymDeprecationWarning, match="'questions'"):
        env = gymnasium.make("SearchQA-v0", questions="test", **SMALL_QA)
    assert env.unwrapped.tasks[0].id.startswith("test")
    with pytest.warns(AgentGymDeprecationWarning, match="'questions'"):  # the long form passes kwargs through
        env = gymnasium.make("SearchQA-LongForm-v0", questions="test", **SMALL_QA)
    assert env.unwrapped.tasks[0].long_form


def test_old_and_new_kwarg_together_are_refused():
    with pytest.raises(ConfigError, match=r"only one of .queries. \(deprecated\) and .tasks."):
        gymnasium.make("TravelPlanner-v0", queries="train", tasks="train")


def test_a_misspelt_kwarg_lists_only_the_new_names():
    with pytest.raises(ConfigError, match="tasks") as caught:
        gymnasium.make("TravelPlanner-v0", taks="train")
    assert "queries" not in str(caught.value)


@pytest.mark.parametrize("env_id", ["TravelPlanner-v0", "SearchQA-v0"])
def test_old_reset_options_work_and_warn(env_id):
    env = gymnasium.make(env_id, **(SMALL_QA if env_id.startswith("Search") else {}))
    unwrapped = env.unwrapped
    with pytest.warns(AgentGymDeprecationWarning, match="'query_index'"):
        env.reset(options={"query_index": 2})
    assert unwrapped.task is unwrapped.tasks[2]
    with pytest.warns(AgentGymDeprecationWarning, match="'query_id'"):
        env.reset(options={"query_id": unwrapped.tasks[3].id})
    assert unwrapped.task is unwrapped.tasks[3]
    with pytest.warns(AgentGymDeprecationWarning, match="'query'"):
        row = {k: v for k, v in unwrapped.tasks[1].to_row().items() if k != "id"}
        _, info = env.reset(options={"query": row})
    assert info["task_id"] == "custom"


def test_old_attributes_work_and_warn():
    tp = gymnasium.make("TravelPlanner-v0").unwrapped
    tp.reset(seed=0)
    with pytest.warns(AgentGymDeprecationWarning, match="TravelPlannerEnv.query"):
        assert tp.query is tp.task
    with pytest.warns(AgentGymDeprecationWarning, match="TravelPlannerEnv.queries"):
        assert tp.queries is tp.tasks
    with pytest.warns(AgentGymDeprecationWarning, match="TravelTask.query"):
        assert tp.task.query == tp.task.text and tp.task.text
    qa = gymnasium.make("SearchQA-v0", **SMALL_QA).unwrapped
    qa.reset(seed=0)
    with pytest.warns(AgentGymDeprecationWarning, match="SearchQAEnv.question"):
        assert qa.question is qa.task
    with pytest.warns(AgentGymDeprecationWarning, match="SearchQAEnv.questions"):
        assert qa.questions is qa.tasks
    with pytest.warns(AgentGymDeprecationWarning, match="QATask.question"):
        assert qa.task.question == qa.task.text


@pytest.mark.parametrize(("module", "old", "new"), [
    ("agentgym.envs.travelplanner", "TravelQuery", "TravelTask"),
    ("agentgym.envs.travelplanner", "load_queries", "load_tasks"),
    ("agentgym.envs.travelplanner", "generate_queries", "generate_tasks"),
    ("agentgym.envs.travelplanner.tasks", "TravelQuery", "TravelTask"),
    ("agentgym.envs.travelplanner.tasks", "load_queries", "load_tasks"),
    ("agentgym.envs.travelplanner.tasks", "QUERIES_ENV_VAR", "TASKS_ENV_VAR"),
    ("agentgym.envs.travelplanner.generator", "QueryGenerator", "TaskGenerator"),
    ("agentgym.envs.travelplanner.generator", "QUERY_FIELDS", "TASK_FIELDS"),
    ("agentgym.envs.travelplanner.generator", "generate_queries", "generate_tasks"),
    ("agentgym.envs.searchqa", "Question", "QATask"),
    ("agentgym.envs.searchqa", "load_questions", "load_tasks"),
    ("agentgym.envs.searchqa.data", "Question", "QATask"),
    ("agentgym.envs.searchqa.data", "load_questions", "load_tasks"),
])
def test_old_exported_names_work_and_warn(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(AgentGymDeprecationWarning, match=old):
        assert getattr(mod, old) is getattr(mod, new)


def test_the_old_tasks_module_still_imports_and_warns():
    import sys

    sys.modules.pop("agentgym.envs.travelplanner.queries", None)
    with pytest.warns(AgentGymDeprecationWarning, match="travelplanner.queries"):
        old = importlib.import_module("agentgym.envs.travelplanner.queries")
    from agentgym.envs.travelplanner.tasks import TravelTask

    assert old.TravelTask is TravelTask


@pytest.mark.parametrize(("old", "new", "env_id"), [
    ("AGENTGYM_TRAVELPLANNER_QUERIES", "AGENTGYM_TRAVELPLANNER_TASKS", "TravelPlanner-v0"),
    ("AGENTGYM_SEARCHQA_QUESTIONS", "AGENTGYM_SEARCHQA_TASKS", "SearchQA-v0"),
])
def test_old_environment_variables_work_and_warn(monkeypatch, old, new, env_id):
    monkeypatch.delenv(new, raising=False)
    monkeypatch.setenv(old, "validation")
    with pytest.warns(AgentGymDeprecationWarning, match=old):
        env = gymnasium.make(env_id, **(SMALL_QA if env_id.startswith("Search") else {}))
    assert env.unwrapped.tasks[0].id.startswith("validation")


def test_old_keyword_names_of_public_functions_work_and_warn():
    from agentgym.envs.travelplanner.evaluation import aggregate, evaluate
    from agentgym.envs.travelplanner.solver import solve

    env = gymnasium.make("TravelPlanner-v0").unwrapped
    task, world = env.tasks[0], env.world
    with pytest.warns(AgentGymDeprecationWarning, match="solve\\(\\) kwarg 'query'"):
        result = solve(query=task, world=world, node_limit=20_000)
    assert result.plan == solve(task, world, node_limit=20_000).plan
    report = evaluate(result.plan, task, world)
    with pytest.warns(AgentGymDeprecationWarning, match="aggregate\\(\\) kwarg 'queries'"):
        assert aggregate([report], queries=[task]) == aggregate([report], [task])
