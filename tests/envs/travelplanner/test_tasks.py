"""Query loading: HF field format from every file type, and through `datasets`."""

from __future__ import annotations

import csv
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym import DataError
from agentgym.envs.travelplanner.tasks import TravelTask, load_tasks


def _rows(real_travelplanner, split="validation"):
    with open(real_travelplanner / "queries" / f"{split}.jsonl") as f:
        return [json.loads(line) for line in f]


def test_train_rows_parse_with_plans_and_reference_information(real_travelplanner):
    queries = load_tasks("train", world_root=real_travelplanner)
    assert len(queries) == 45 and {q.level for q in queries} == {"easy", "medium", "hard"}
    assert all(q.annotated_plan and len(q.annotated_plan) == q.days for q in queries)
    assert all(len(q.date) == q.days for q in queries)
    assert queries[0].id == "train-0"


@pytest.mark.parametrize("suffix", ["json", "csv", "parquet"])
def test_every_file_type_gives_the_same_queries(real_travelplanner, tmp_path, suffix):
    rows = _rows(real_travelplanner)
    path = tmp_path / f"validation.{suffix}"
    if suffix == "json":
        path.write_text(json.dumps(rows))
    elif suffix == "csv":
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    expected = load_tasks(real_travelplanner / "queries" / "validation.jsonl")
    assert [q.model_dump(exclude={"id"}) for q in load_tasks(path)] == [q.model_dump(exclude={"id"}) for q in expected]


def test_hf_datasets_loading_on_a_local_copy_of_the_dataset_repo(real_travelplanner, tmp_path, monkeypatch):
    pytest.importorskip("datasets")
    rows = _rows(real_travelplanner)
    with open(tmp_path / "validation.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (tmp_path / "README.md").write_text(
        "---\nconfigs:\n- config_name: validation\n  data_files:\n  - split: validation\n    path: validation.csv\n---\n")
    monkeypatch.setenv("AGENTGYM_TRAVELPLANNER_HF", str(tmp_path))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = load_tasks("hf:validation")
    assert len(loaded) == 180 and loaded[5].id == "validation-5"
    assert loaded[5].model_dump(exclude={"id"}) == TravelTask.from_row(rows[5]).model_dump(exclude={"id"})


def test_bad_sources_raise_data_errors(tmp_path):
    with pytest.raises(DataError, match="no task file"):
        load_tasks(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"org": "A", "dest": "B", "days": 3, "visiting_city_number": 1, '
                   '"date": "__import__(\'os\')", "people_number": 1, "budget": 1}\n')
    with pytest.raises(DataError, match="date"):
        load_tasks(bad)


@given(st.text(max_size=80))
def test_literal_fields_never_evaluate_code(text):
    row = {"org": "A", "dest": "B", "days": 3, "visiting_city_number": 1, "date": text,
           "people_number": 1, "budget": 100, "local_constraint": text}
    try:
        TravelTask.from_row(row)
    except DataError:
        pass


def test_envs_on_one_query_file_share_the_parsed_queries(real_travelplanner, tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes((real_travelplanner / "queries" / "train.jsonl").read_bytes())
    first, second = load_tasks(path), load_tasks(path)
    assert first is not second and all(a is b for a, b in zip(first, second))
    path.write_text(path.read_text().splitlines()[0] + "\n")  # an edited file is read again
    assert len(load_tasks(path)) == 1
