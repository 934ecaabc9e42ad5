"""The results folder: atomic appends, torn-tail repair, the manifest check and the lock."""

from __future__ import annotations

import errno
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.errors import ConfigError, DataError, StorageError
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
        store.append(json.dumps({"episode": 0}))
    with pytest.raises(ConfigError, match="seed"), ResultStore(tmp_path) as store:
        store.open({**IDENTITY, "seed": 1})
    assert json.loads((tmp_path / MANIFEST).read_text())["identity"] == IDENTITY


def test_a_folder_without_results_is_free_for_another_run(tmp_path):
    """A run that failed before its first episode must not block the corrected command (issue 22)."""
    with ResultStore(tmp_path) as store:
        store.open(IDENTITY)
    with ResultStore(tmp_path) as store:
        store.open({**IDENTITY, "seed": 1})
    assert json.loads((tmp_path / MANIFEST).read_text())["identity"] == {**IDENTITY, "seed": 1}


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


# -- a full disk (issue 12, finding 11) ----------------------------------------------------------
class FullDisk:
    """The store's ``os`` with a disk that fills up: ``writes`` whole writes pass, the next one is cut
    short half-way (as a nearly full disk does), and every write after it fails with ENOSPC."""

    def __init__(self, writes: int) -> None:
        self.writes, self.torn = writes, False

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        if self.writes > 0:
            self.writes -= 1
            return os.write(fd, data)
        if not self.torn:
            self.torn = True
            return os.write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_raises_a_storage_error_and_leaves_only_whole_records(tmp_path, monkeypatch):
    import agentgym.runner.store as store_module

    with ResultStore(tmp_path) as store:
        store.open(IDENTITY)
        monkeypatch.setattr(store_module, "os", FullDisk(writes=2))
        store.append(record(0))
        store.append(record(1))
        with pytest.raises(StorageError) as failure:
            store.append(record(2, "x" * 1000))
    monkeypatch.undo()
    message = str(failure.value)
    assert failure.value.errno == errno.ENOSPC and isinstance(failure.value, OSError) and "\n" not in message
    assert message.startswith(f"cannot write {tmp_path / RESULTS}: No space left on device (ENOSPC); 2 result(s)")
    assert (tmp_path / RESULTS).read_text().endswith("}\n")  # the half-written line was cut off again
    with ResultStore(tmp_path) as store:
        assert sorted(store.open(IDENTITY)) == [0, 1]
        store.append(record(2))
    assert sorted(load_results(tmp_path / RESULTS)) == [0, 1, 2]


def test_a_failing_fsync_is_a_storage_error_and_the_record_is_not_counted(tmp_path, monkeypatch):
    import agentgym.runner.store as store_module

    class BrokenSync(FullDisk):
        def fsync(self, fd):
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    with ResultStore(tmp_path) as store:
        store.open(IDENTITY)
        monkeypatch.setattr(store_module, "os", BrokenSync(writes=10))
        with pytest.raises(StorageError, match=r"Input/output error \(EIO\); 0 result\(s\)"):
            store.append(record(0))
    assert (tmp_path / RESULTS).read_text() == ""


def test_a_folder_that_cannot_be_created_is_a_storage_error(tmp_path):
    (tmp_path / "file").write_text("in the way")
    with pytest.raises(StorageError, match="cannot write .*file"):
        ResultStore(tmp_path / "file" / "run").open(IDENTITY)


def test_agentgym_run_on_a_full_disk_ends_with_one_line_and_resumes(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import agentgym.runner.store as store_module
    from agentgym.cli import app

    args = ["run", "TravelPlanner-v0", "--agent", "gold", "--episodes", "4", "--concurrency", "1",
            "--out", str(tmp_path), "--quiet", "--no-plot"]
    monkeypatch.setattr(store_module, "os", FullDisk(writes=2))
    result = CliRunner().invoke(app, args, terminal_width=80, catch_exceptions=False)
    monkeypatch.undo()
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot write {tmp_path / RESULTS}: No space left")
    assert "2 result(s) are safely in" in lines[0]
    assert sorted(load_results(tmp_path / RESULTS)) == [0, 1]
    again = CliRunner().invoke(app, args, terminal_width=80, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert sorted(load_results(tmp_path / RESULTS)) == [0, 1, 2, 3]
    assert len((tmp_path / RESULTS).read_text().splitlines()) == 4  # nothing lost, nothing played twice


def test_a_full_disk_while_writing_the_summary_is_one_line_too(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import agentgym.cli.run as cli_module
    from agentgym.cli import app

    def full(path, payload):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(cli_module, "_write_json", full)
    result = CliRunner().invoke(app, ["run", "TravelPlanner-v0", "--agent", "gold", "--episodes", "2",
                                      "--out", str(tmp_path), "--quiet", "--no-plot"], catch_exceptions=False)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"error: cannot write {tmp_path / 'summary.json'}: No space left on device; 2 result(s)" in result.output


@pytest.mark.parametrize("manifest", [b'{"format": 1, "identity": {"env_id"', b"\xff\xfe junk", b"[1, 2]",
                                      b'{"format": 1}'])
def test_a_corrupt_manifest_is_a_data_error_like_a_corrupt_results_line(tmp_path, manifest):
    with ResultStore(tmp_path) as store:
        store.open(IDENTITY)
        store.append(record(0))
    (tmp_path / MANIFEST).write_bytes(manifest)
    with pytest.raises(DataError, match=r"run\.json is not a run manifest .*; fix or remove it"), \
            ResultStore(tmp_path) as store:
        store.open(IDENTITY)
