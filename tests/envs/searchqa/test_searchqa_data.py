"""FlashRAG / Search-R1 question and corpus formats load from jsonl, json and parquet."""

from __future__ import annotations

import json

import pytest

from agentgym import DataError
from agentgym.envs.searchqa.data import Passage, QATask, load_passages, load_tasks, split_contents


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_flashrag_questions_and_ids(tmp_path):
    path = _jsonl(tmp_path / "nq.questions.jsonl", [
        {"id": "test_0", "question": "who sings?", "golden_answers": ["A", "B"], "metadata": {"answer_type": "short"}},
        {"question": " where? ", "golden_answers": "Paris"},
    ])
    first, second = load_tasks(path)
    assert first == QATask("test_0", "who sings?", ("A", "B")) and not first.long_form
    assert second.id == "nq-1" and second.text == "where?" and second.golden_answers == ("Paris",)


def test_search_r1_parquet_rows(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    prompt = [{"role": "user", "content": "Answer the given question... Question: who wrote Hamlet?\n"}]
    reward = {"style": "rule", "ground_truth": {"target": ["Shakespeare"]}}
    rows = [{"data_source": "nq", "prompt": prompt, "reward_model": reward,
             "extra_info": {"split": "train", "index": 0}},
            {"id": "x", "question": "q2", "golden_answers": ["a2"], "metadata": {"answer_type": "long"}}]
    pq.write_table(pa.Table.from_pylist(rows[:1]), tmp_path / "train.parquet")
    pq.write_table(pa.Table.from_pylist(rows[1:]), tmp_path / "hf.parquet")
    (q,) = load_tasks(tmp_path / "train.parquet")
    assert q.text == "who wrote Hamlet?" and q.golden_answers == ("Shakespeare",)
    (hf,) = load_tasks(tmp_path / "hf.parquet")
    assert hf.id == "x" and hf.long_form


def test_corpus_rows_in_both_layouts(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", [
        {"id": "0", "contents": '"Hamlet"\nHamlet is a tragedy.\nSecond line.'},
        {"id": 1, "title": "Ophelia", "text": "A character."},
        {"contents": "No title line"},
    ])
    passages = list(load_passages(path))
    assert passages[0] == Passage("0", "Hamlet", "Hamlet is a tragedy.\nSecond line.")
    assert passages[1] == Passage("1", "Ophelia", "A character.")
    assert passages[2] == Passage("2", "No title line", "")
    assert passages[1].contents == '"Ophelia"\nA character.'
    json_path = tmp_path / "c.json"
    json_path.write_text(json.dumps([{"id": "a", "contents": "T\nx"}]))
    assert list(load_passages(json_path)) == [Passage("a", "T", "x")]
    assert split_contents('"Title"\ntext') == ("Title", "text")


def test_malformed_files_raise_data_errors(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_tasks(tmp_path / "missing.jsonl")
    with pytest.raises(DataError, match=r"q\.jsonl:1: .*field 'golden_answers'"):
        load_tasks(_jsonl(tmp_path / "q.jsonl", [{"question": "q", "golden_answers": []}]))
    with pytest.raises(DataError, match="JSON object"):
        load_tasks(_jsonl(tmp_path / "l.jsonl", [[1, 2]]))
    with pytest.raises(DataError, match="neither field 'contents'"):
        list(load_passages([{"id": "x", "body": "?"}]))
    bad = tmp_path / "list.json"
    bad.write_text('{"not": "a list"}')
    with pytest.raises(DataError, match="list of rows"):
        load_tasks(bad)


def test_a_blank_gold_answer_loads_as_search_r1_loads_it(tmp_path):
    """Search-R1 loads ``golden_answers: [""]`` and scores it (an answer normalizing to nothing matches)."""
    (question,) = load_tasks(_jsonl(tmp_path / "q.jsonl", [{"question": "q", "golden_answers": [""]}]))
    assert question.golden_answers == ("",)
