"""Training rows both ways in Search-R1's layout: export (``prepare_rows``) and the loop's row mapping."""

from __future__ import annotations

import json

import pytest

import agentgym  # noqa: F401
from agentgym import ConfigError
from agentgym.integrations.verl.envs import row_extra_info
from agentgym.integrations.verl.prepare import prepare_rows
from agentgym.integrations.verl.config import AgentGymConfig, EnvTask
from test_searchqa_parity import PROMPT  # Search-R1's own prompt, written once

CORPUS = [
    {"id": "0", "contents": '"Genentech"\nGenentech is a biotechnology company founded in 1976.'},
    {"id": "1", "contents": '"Roche"\nRoche acquired Genentech in 2009.'},
]


def _files(tmp_path, name, rows):
    (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CORPUS))
    return tmp_path / name


def _kwargs(tmp_path):
    return {"corpus": str(tmp_path / "c.jsonl"), "action_format": "search-r1", "cache_dir": str(tmp_path / "cache")}


def _play(row, tmp_path):
    settings = AgentGymConfig(env_kwargs={"corpus": CORPUS, "cache_dir": str(tmp_path / "cache")})
    task = EnvTask.from_extra_info(row_extra_info(row), settings)
    env = task.make()
    obs, info = env.reset(options=task.reset_options)
    return env, obs, info


def test_a_search_r1_row_plays_its_own_question_and_id(tmp_path):
    """Defect: the question was re-read from the prompt's last "Question:", the id made up."""
    question = "In the show Question: Time, who founded Genentech?"
    row = {"id": "test_42", "question": question, "golden_answers": ["Swanson"], "data_source": "nq",
           "prompt": [{"role": "user", "content": PROMPT.format(q=question)}], "ability": "fact-reasoning",
           "reward_model": {"style": "rule", "ground_truth": {"target": ["Swanson"]}},
           "extra_info": {"split": "test", "index": 42}}
    env, obs, info = _play(row, tmp_path)
    assert env.unwrapped.task.text == question and info["task_id"] == "test_42"
    assert obs == PROMPT.format(q=question)


def test_exported_rows_have_search_r1s_layout_and_play_back_the_same(tmp_path, capsys):
    path = _files(tmp_path, "hotpotqa_dev500.questions.jsonl", [
        {"id": "hp-1", "question": "Which company bought Genentech", "golden_answers": ["Roche"]}])
    (row,) = prepare_rows("SearchQA-v0", tasks=path, env_kwargs=_kwargs(tmp_path))
    assert "data_source 'hotpotqa' taken from the file name" in capsys.readouterr().err
    assert row["data_source"] == "hotpotqa" and row["ability"] == "fact-reasoning"
    assert row["extra_info"]["split"] == "dev" and row["extra_info"]["index"] == 0
    assert (row["id"], row["question"], row["golden_answers"]) == ("hp-1", "Which company bought Genentech", ["Roche"])
    assert row["prompt"] == [{"role": "user", "content": PROMPT.format(q="Which company bought Genentech?")}]
    # As Search-R1's trainer sees it: its own keys only (no env_id), mapped back by the loop
    search_r1_row = {k: row[k] for k in ("id", "question", "golden_answers", "data_source", "prompt", "ability",
                                         "reward_model")}
    search_r1_row["extra_info"] = {"split": "dev", "index": 0}
    env, obs, info = _play(search_r1_row, tmp_path)
    assert obs == row["prompt"][0]["content"] and info["task_id"] == "hp-1"
    assert env.step("<answer>Roche</answer>")[1] == 1.0


def test_a_question_file_naming_no_dataset_is_refused(tmp_path):
    path = _files(tmp_path, "train.jsonl", [{"question": "q", "golden_answers": ["a"]}])
    with pytest.raises(ConfigError, match="data_source"):
        prepare_rows("SearchQA-v0", tasks=path, env_kwargs=_kwargs(tmp_path))
    rows = prepare_rows("SearchQA-v0", tasks=path, env_kwargs=_kwargs(tmp_path), data_source="searchR1_nq")
    assert rows[0]["data_source"] == "searchR1_nq" and rows[0]["extra_info"]["split"] == "train"


def test_exported_rows_are_scored_by_verls_dispatcher(tmp_path):
    verl_scores = pytest.importorskip("verl.utils.reward_score")
    path = _files(tmp_path, "nq_test.jsonl", [{"question": "Which company bought Genentech",
                                                "golden_answers": ["Roche"]}])
    (row,) = prepare_rows("SearchQA-v0", tasks=path, env_kwargs=_kwargs(tmp_path), data_source="searchR1_nq")
    solution = row["prompt"][0]["content"] + "<answer> Roche </answer>"
    truth = row["reward_model"]["ground_truth"]
    assert verl_scores.default_compute_score(row["data_source"], solution, truth) == 1.0
    assert verl_scores.default_compute_score(row["data_source"], row["prompt"][0]["content"], truth) == 0.0


def test_a_blank_gold_plays_as_search_r1_scores_it(tmp_path):
    """Search-R1 loads ``target: [""]`` and scores an answer that normalizes to nothing as a match."""
    row = {"data_source": "nq", "prompt": [{"role": "user", "content": PROMPT.format(q="What is it?")}],
           "reward_model": {"style": "rule", "ground_truth": {"target": [""]}}, "extra_info": {"split": "train",
                                                                                               "index": 0}}
    env, *_ = _play(row, tmp_path)
    assert env.step("<answer>.</answer>")[1] == 1.0
    path = _files(tmp_path, "nq_train.jsonl", [{"question": "What is it", "golden_answers": [""]}])
    (exported,) = prepare_rows("SearchQA-v0", tasks=path, env_kwargs=_kwargs(tmp_path))
    assert exported["reward_model"]["ground_truth"]["target"] == [""]
