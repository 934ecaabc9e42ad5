"""Corrupt query files raise DataError naming the file, the line (or row) and the field.

Before, the loaders let ValueError, OverflowError, TypeError, UnicodeDecodeError, _csv.Error,
AttributeError and RecursionError escape from a bad file.
"""

from __future__ import annotations

import csv
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym.envs.travelplanner.tasks import TravelTask, load_tasks
from agentgym.errors import DataError

ROW = {"org": "Austin", "dest": "Dallas", "days": 3, "visiting_city_number": 1,
       "date": "['2022-03-01', '2022-03-02', '2022-03-03']", "people_number": 1,
       "local_constraint": "{'house rule': None, 'cuisine': None, 'room type': None, 'transportation': None}",
       "budget": 1000, "query": "q", "level": "easy"}


def _jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _csv(path, rows, fields=None):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields or list(ROW))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _raises(path, *parts):
    with pytest.raises(DataError) as info:
        load_tasks(path)
    assert type(info.value) is DataError
    message = str(info.value)
    for part in (str(path), *parts):
        assert part in message, message
    assert len(message) < 600
    return message


def test_jsonl_errors_name_the_line_and_field(tmp_path):
    _raises(_jsonl(tmp_path / "a.jsonl", [ROW, "{not json"]), "line 2", "not valid JSON")
    _raises(_jsonl(tmp_path / "b.jsonl", [ROW, '{"days": ' + "9" * 5_000 + "}"]), "line 2", "not usable JSON")
    _raises(_jsonl(tmp_path / "c.jsonl", [ROW, "[" * 100_000]), "line 2")
    _raises(_jsonl(tmp_path / "d.jsonl", [ROW, ROW, "[1, 2]"]), "line 3", "must be an object")
    _raises(_jsonl(tmp_path / "e.jsonl", [ROW, {**ROW, "date": "[1, {[]: 2}]"}]), "line 2", "'date'")
    _raises(_jsonl(tmp_path / "f.jsonl", [{**ROW, "annotated_plan": "5"}]), "line 1", "annotated_plan")
    _raises(_jsonl(tmp_path / "g.jsonl", [{**ROW, "date": "[" + "0," * 600 + "0]"}]), "line 1", "date", "longer than")
    _raises(_jsonl(tmp_path / "h.jsonl", [{**ROW, "days": "x"}]), "line 1", "'days'")


def test_bytes_that_are_not_utf8_name_their_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(ROW).encode() + b"\n" + json.dumps(ROW).encode() + b"\n\xff\xfe\n")
    _raises(path, "line 3", "not UTF-8")
    path = tmp_path / "bad.csv"
    path.write_bytes(b"org,dest\nA,B\n\xff,C\n")
    _raises(path, "line 3", "not UTF-8")


def test_csv_errors_name_the_line_and_field(tmp_path):
    _raises(_csv(tmp_path / "a.csv", [ROW, {**ROW, "budget": "1e999"}]), "line 3", "'budget'")
    _raises(_csv(tmp_path / "b.csv", [ROW, {**ROW, "days": "three"}]), "line 3", "'days'")
    _raises(_csv(tmp_path / "c.csv", [{**ROW, "people_number": "nan"}]), "line 2", "'people_number'")
    path = tmp_path / "d.csv"
    path.write_text("org,dest\nA,B,C\n")
    _raises(path, "line 2", "more fields")
    path = tmp_path / "e.csv"
    path.write_text("org,dest\n" + '"' + "x" * 200_000 + '",B\n')
    _raises(path, "line 2", "not valid CSV")
    path = tmp_path / "f.csv"
    path.write_text("org,dest\nA\x00,B\n")
    _raises(path, "line 2", "field")


def test_json_and_parquet_errors(tmp_path):
    for text in ('"a string"', "42", '{"data": 5}', "[" * 100_000, '[{"days": ' + "1" * 5_000 + "}]"):
        path = tmp_path / "q.json"
        path.write_text(text)
        with pytest.raises(DataError) as info:
            load_tasks(path)
        assert type(info.value) is DataError and str(path) in str(info.value)
    path = tmp_path / "r.json"
    path.write_text(json.dumps([ROW, {**ROW, "date": "nope("}]))
    _raises(path, "row 1", "'date'")
    pytest.importorskip("pyarrow")
    path = tmp_path / "q.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    _raises(path, "parquet")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.sampled_from(["jsonl", "json", "csv"]))
def test_any_bytes_give_queries_or_a_data_error(tmp_path, data, suffix):
    path = tmp_path / f"fuzz.{suffix}"
    path.write_bytes(json.dumps(ROW).encode() + b"\n" + data if suffix == "jsonl" else data)
    try:
        queries = load_tasks(path)
    except DataError as exc:
        assert type(exc) is DataError and str(path) in str(exc)
    else:
        assert all(isinstance(q, TravelTask) for q in queries)
