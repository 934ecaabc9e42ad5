"""The world cache holds data only, is checked on every open, and replaces only agentgym's own folders.

Each test opens a tiny synthetic world with its own cache directory, then plants, corrupts or
blocks cache files the way an attacker or a crash would, and reopens it in a fresh process state
(the per-process world memo is emptied).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentgym.envs.travelplanner.world import _database as world_mod
from agentgym.envs.travelplanner.world import World
from agentgym.errors import DataError, StorageError


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentgym.envs.travelplanner.synthetic import generate_world

    return generate_world(tmp_path_factory.mktemp("cache-world"), seed=5, scale="tiny")


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(world_mod, "_OPEN", {})


def _reopen(root: Path, cache_dir: Path) -> World:
    world_mod._OPEN.clear()
    return World.open(root, cache_dir=cache_dir)


def _fingerprint(world: World) -> list:
    """Enough lookups to notice a changed byte anywhere in the flight records."""
    rows = []
    for o in world.cities:
        for d in world.cities:
            for date in (f"2022-03-{day:02d}" for day in range(1, 32)):
                rows.extend(world.flights(o, d, date))
    numbers = sorted({f.number for f in rows})
    return [rows, [world.flights_by_number(n) for n in numbers],
            [world.accommodations(c) for c in world.cities], [world.city_table("restaurants", c) for c in world.cities]]


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


class _Payload:
    """Unpickling this creates ``marker``: proof that a planted pickle ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_the_cache_holds_only_data_files(root: Path, tmp_path: Path) -> None:
    World.open(root, cache_dir=tmp_path)
    cache = world_mod._cache_folder(root, tmp_path)
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files and {p.suffix for p in files} <= {".npy", ".json"}
    for p in files:
        if p.suffix == ".npy":
            np.load(p, allow_pickle=False)  # raises on an object (pickled) array


def test_a_planted_pickle_is_never_loaded(root: Path, tmp_path: Path) -> None:
    before = _fingerprint(World.open(root, cache_dir=tmp_path))
    cache = world_mod._cache_folder(root, tmp_path)
    marker = tmp_path / "pwned"
    (cache / "small.pkl").write_bytes(pickle.dumps(_Payload(marker)))
    assert _fingerprint(_reopen(root, tmp_path)) == before
    assert not marker.exists()
    assert not (cache / "small.pkl").exists()  # the tampered cache was rebuilt


@pytest.mark.parametrize("rel", ["flights/records.npy", "flights/by_number.npy", "flights/meta.json", "small.json"])
def test_a_corrupted_cache_file_is_rebuilt(root: Path, tmp_path: Path, rel: str) -> None:
    before = _fingerprint(World.open(root, cache_dir=tmp_path))
    path = world_mod._cache_folder(root, tmp_path) / rel
    data = bytearray(path.read_bytes())
    data[-2] ^= 0xFF  # one flipped byte near the end: the file still parses
    path.write_bytes(bytes(data))
    assert _fingerprint(_reopen(root, tmp_path)) == before


def test_a_truncated_or_missing_file_is_rebuilt(root: Path, tmp_path: Path) -> None:
    before = _fingerprint(World.open(root, cache_dir=tmp_path))
    cache = world_mod._cache_folder(root, tmp_path)
    records = cache / "flights" / "records.npy"
    records.write_bytes(records.read_bytes()[:-24])
    assert _fingerprint(_reopen(root, tmp_path)) == before
    (cache / "small.json").unlink()
    assert _fingerprint(_reopen(root, tmp_path)) == before


def test_a_folder_that_is_not_agentgyms_is_left_alone(root: Path, tmp_path: Path) -> None:
    cache = world_mod._cache_folder(root, tmp_path)
    cache.mkdir(parents=True)
    (cache / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match="not an agentgym cache"):
        World.open(root, cache_dir=tmp_path)
    assert [p.name for p in cache.iterdir()] == ["notes.txt"] and (cache / "notes.txt").read_text() == "mine"


def test_a_file_or_symlink_at_the_cache_path_is_left_alone(root: Path, tmp_path: Path) -> None:
    cache = world_mod._cache_folder(root, tmp_path / "a")
    cache.parent.mkdir(parents=True)
    cache.write_text("a file")
    with pytest.raises(DataError, match="not an agentgym cache"):
        World.open(root, cache_dir=tmp_path / "a")
    assert cache.read_text() == "a file"

    elsewhere = tmp_path / "user-folder"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep")
    linked = world_mod._cache_folder(root, tmp_path / "b")
    linked.parent.mkdir(parents=True)
    linked.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(DataError, match="not an agentgym cache"):
        World.open(root, cache_dir=tmp_path / "b")
    assert [p.name for p in elsewhere.iterdir()] == ["keep.txt"]


def test_the_data_folder_is_never_written(root: Path, tmp_path: Path) -> None:
    before = _snapshot(root)
    World.open(root, cache_dir=tmp_path / "cache")
    _reopen(root, tmp_path / "cache")
    assert _snapshot(root) == before
    assert not list(root.rglob("*.npy")) and not list(root.rglob("manifest.json"))


def test_only_cache_folders_are_written_under_the_cache_dir(root: Path, tmp_path: Path) -> None:
    World.open(root, cache_dir=tmp_path)
    entries = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.iterdir())
    assert entries == ["tables"]
    (table,) = (tmp_path / "tables").iterdir()  # no temporary or moved-aside folder is left behind
    assert (table / "manifest.json").is_file()


def test_concurrent_first_opens_agree(root: Path, tmp_path: Path) -> None:
    code = ("import sys; from agentgym.envs.travelplanner.world import World; "
            "w = World.open(sys.argv[1], cache_dir=sys.argv[2]); print(w.n_flights)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root), str(tmp_path)], stdout=subprocess.PIPE, env=env)
             for _ in range(3)]
    outs = {p.communicate(timeout=300)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs) and len(outs) == 1
    assert _reopen(root, tmp_path).n_flights == int(outs.pop())
    assert len(list((tmp_path / "tables").iterdir())) == 1


def test_leftovers_of_a_killed_build_are_removed_once_old(root: Path, tmp_path: Path) -> None:
    cache = world_mod._cache_folder(root, tmp_path)
    cache.parent.mkdir(parents=True)
    old, recent = cache.parent / f".{cache.name}.tmp-old", cache.parent / f".{cache.name}.tmp-recent"
    for folder in (old, recent):
        (folder / "flights").mkdir(parents=True)
        (folder / "flights" / "records.npy").write_bytes(b"partial")
    os.utime(old, (1, 1))
    World.open(root, cache_dir=tmp_path)
    assert not old.exists() and recent.exists()  # a recent one may be another process's build


def test_an_unwritable_cache_dir_is_a_storage_error(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    with pytest.raises(StorageError, match="make it writable, or set AGENTGYM_CACHE_DIR"):
        World.open(root, cache_dir=tmp_path)


def test_opening_a_world_imports_neither_the_env_nor_the_evaluator(root, tmp_path):
    """``World.open`` is the first step of every full-scale open; the env, evaluator and pydantic
    are not needed for it, and importing them made the first open 0.1 s slower."""
    code = ("import sys\nfrom agentgym.envs.travelplanner.world import World\n"
            f"World.open({str(root)!r}, cache_dir={str(tmp_path)!r})\n"
            "print(' '.join(sorted(sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                 .stdout.split())
    heavy = sorted(m for m in loaded if m.partition(".")[0] in ("pydantic", "pandas")
                   or m.startswith(("agentgym.envs.travelplanner.env", "agentgym.envs.travelplanner.evaluation")))
    assert not heavy, heavy
