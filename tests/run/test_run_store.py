"""The results folder: atomic appends, torn-tail repair, the manifest check and the lock."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.errors import ConfigError, DataError
from agentgym.runner.store import MANIFEST, RESULTS, ResultStore, load_results

IDENTITY = {"env_id": "TravelPlanner-v0", "agent": {"kind": "openai", "model": "m"}, "seed": 0}


def record(episode: int, text: str = "") -> str:
    return json.dumps({"episode": episode, "note": text}, ensure_ascii=False)


def test_appended_records_are_read_back_by_the_next_open(tmp_path):
    with ResultStore(tmp_path) as store:
        assert store.open(IDENTITY) == {}
        store.append(record(0))
        store.append(record(2, "é\n中"))
    with ResultStore(tmp_path) as store:
        done = store.open(IDENTITY)
    assert sorted(done) == [0, 2] and done[2]["note"] == "é\n中"
    assert (tmp_path / RESULTS).read_text().count("\n") == 2


@settings(max_examples=50, deadline=None)
@given(notes=st.lists(st.text(max_size=50), min_size=1, max_size=6), cut=st.integers(min_value=0))
def test_a_crash_mid_write_loses_only_the_torn_last_record(tmp_path_factory, notes, cut):
    folder = tmp_path_factory.mktemp("run")
    lines = [(record(i, note) + "\n").encode() for i, note in enumerate(notes)]
    data = b"".join(lines)
    cut %= len(data) + 1
    (folder / RESULTS).write_bytes(data[:cut])  # the file as a kill at byte `cut` leaves it
    whole = sum(1 for i in range(len(lines)) if len(b"".join(lines[:i + 1])) <= cut)
    with ResultStore(folder) as store:
        done = store.open(IDENTITY)
        assert sorted(done) == list(range(whole))
        store.append(record(99))
    assert set(load_results(folder / RESULTS)) == set(range(whole)) | {99}


def test_a_duplicated_record_counts_once(tmp_path):
    (tmp_path / RESULTS).write_text(record(1, "first") + "\n" + record(1, "second") + "\n")
    assert load_results(tmp_path / RESULTS) == {1: {"episode": 1, "note": "first"}}


def test_a_corrupt_line_in_the_middle_is_an_error_not_silently_dropped(tmp_path):
    (tmp_path / RESULTS).write_text(record(0) + "\n{oops\n" + record(1) + "\n")
    with pytest.raises(DataError, match=":2"):
        load_results(tmp_path / RESULTS)


def test_a_folder_of_another_run_is_refused(tmp_path):
    with ResultStore(tmp_path) as store:
        store.open(IDENTITY)
    with pytest.raises(ConfigError, match="seed"), ResultStore(tmp_path) as store:
        store.open({**IDENTITY, "seed": 1})
    assert json.loads((tmp_path / MANIFEST).read_text())["identity"] == IDENTITY


def test_two_runs_cannot_write_one_folder_at_once(tmp_path):
    with ResultStore(tmp_path) as first:
        first.open(IDENTITY)
        with pytest.raises(ConfigError, match="no other agentgym run"), ResultStore(tmp_path) as second:
            second.open(IDENTITY)
    with ResultStore(tmp_path) as third:  # the lock goes with the first run
        third.open(IDENTITY)


def test_records_are_appended_with_one_write_each(tmp_path, monkeypatch):
    writes = []
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: writes.append(bytes(data)) or real_write(fd, data))
    with ResultStore(tmp_path, fsync=False) as store:
        store.open(IDENTITY)
        store.append(record(0, "x" * 10_000))
    assert len(writes) == 1 and writes[0].endswith(b"\n")
