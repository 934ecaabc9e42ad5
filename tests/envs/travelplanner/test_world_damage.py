"""A damaged database is refused with a DataError naming the file, the line and the fix, never opened
with partial data, and never a bare OSError; writing the cache on a failing disk is a StorageError.

Each test copies a tiny synthetic world, damages one file the way a crash, a disk or an editor
would, and opens it with its own cache. ``test_world_damage_real.py`` fuzzes the real database.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _rss import peak_rss

from agentgym.envs.travelplanner.world import World
from agentgym.envs.travelplanner.world import _database as world_mod
from agentgym.errors import DataError, StorageError

FLIGHTS = "database/flights/clean_Flights_2022.csv"
HOTELS = "database/accommodations/clean_accommodations_2022.csv"
DISTANCES = "database/googleDistanceMatrix/distance.csv"
CITIES = "database/background/citySet.txt"
CITY_STATES = "database/background/citySet_with_states.txt"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentgym.envs.travelplanner.synthetic import generate_world

    return generate_world(tmp_path_factory.mktemp("damage-world"), seed=5, scale="tiny")


@pytest.fixture
def world(pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of the tiny world (and an empty per-process world memo)."""
    monkeypatch.setattr(world_mod, "_OPEN", {})
    return shutil.copytree(pristine, tmp_path / "world")


def _open(root: Path) -> World:
    return World.open(root, cache_dir=root.parent / "cache")


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def _write_rows(path: Path, rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def _set_cell(path: Path, row: int, column: str, value: str) -> None:
    rows = _rows(path)
    rows[row][rows[0].index(column)] = value
    _write_rows(path, rows)


def test_a_file_replaced_by_a_folder_is_a_data_error(world: Path) -> None:
    (world / HOTELS).unlink()
    (world / HOTELS).mkdir()
    with pytest.raises(DataError, match=r"clean_accommodations_2022\.csv is a folder; expected the database file"):
        _open(world)


def test_a_city_list_that_is_not_utf8_is_a_data_error(world: Path) -> None:
    path = world / CITIES
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = "Montr\xe9al"
    path.write_bytes("\n".join(lines).encode("latin-1"))
    with pytest.raises(DataError, match=r"citySet\.txt, line 3: byte 0xe9 is not UTF-8 text; save the file as UTF-8"):
        _open(world)


def test_a_table_that_is_not_utf8_names_the_line(world: Path) -> None:
    rows = _rows(world / FLIGHTS)
    rows[40][6] = "Montr\xe9al"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    (world / FLIGHTS).write_bytes(out.getvalue().encode("latin-1"))
    with pytest.raises(DataError, match=r"clean_Flights_2022\.csv, line 41: byte 0xe9 is not UTF-8"):
        _open(world)


def test_an_unreadable_file_is_a_data_error(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As root, chmod cannot take read access away; the OS's refusal is raised where the file is read."""
    real = Path.read_bytes

    def refuse(self: Path) -> bytes:
        if self.name == "citySet.txt":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(DataError, match=r"cannot read .*citySet\.txt: permission denied; make it readable"):
        _open(world)


def test_a_full_cache_disk_is_a_storage_error(world: Path) -> None:
    """A real write failure: the child's file-size limit makes the kernel refuse the cache's
    larger files (EFBIG), as a full disk refuses them (ENOSPC)."""
    code = ("import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))\n"
            "from agentgym.envs.travelplanner.world import World\n"
            "from agentgym.errors import StorageError\n"
            "try:\n"
            "    World.open(sys.argv[1], cache_dir=sys.argv[2])\n"
            "except StorageError as exc:\n"
            "    print('StorageError', exc, exc.errno)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code, str(world), str(world.parent / "cache")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"StorageError cannot write the cache under {world.parent / 'cache'}"), done.stdout
    assert "File too large (EFBIG)" in done.stdout and "set AGENTGYM_CACHE_DIR" in done.stdout
    tables = world.parent / "cache" / "tables"
    assert not [p for p in tables.iterdir() if p.name.startswith(".")]  # the partial build was removed


def test_a_full_disk_says_so(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from agentgym.envs.travelplanner.world import _flights

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_flights.np, "save", full)
    with pytest.raises(StorageError, match=r"the disk is full \(ENOSPC\); free space there, or set AGENTGYM_CACHE_DIR"):
        _open(world)


def test_a_ten_megabyte_flight_number_is_refused_in_bounded_memory(world: Path) -> None:
    """Before, a 10 MB flight number made the fixed-width key column 10 MB wide for every row of
    its block (2.5 KB of memory per character of the cell; 10.7 GB for the real database)."""
    path = world / FLIGHTS
    rows = _rows(path)[:200]  # few rows, so the old code's blow-up stays a few GB at 2 MB
    for size, bound in ((2 << 20, 200), (10 << 20, 300)):  # and the audit's 10 MB
        rows[100][0] = "F" + "7" * size
        _write_rows(path, rows)
        with peak_rss() as rss, pytest.raises(DataError) as err:
            _open(world)
        assert (f"line 101: column 'Flight Number' holds a value of {size + 1:,} bytes; "
                f"the most allowed is 32") in str(err.value)
        assert rss["mb"] < bound, rss


def test_a_huge_cell_in_a_small_table_names_the_line(world: Path) -> None:
    _set_cell(world / HOTELS, 7, "house_rules", "No pets " * 600)
    with pytest.raises(DataError, match=r"accommodations_2022\.csv, line 8: a cell holds more than 4,096 characters"):
        _open(world)


def test_a_file_cut_mid_row_is_refused_not_opened_with_partial_data(world: Path) -> None:
    """pandas pads the cut row with missing cells and dropna() drops it: partial data, silently."""
    path = world / HOTELS
    text = path.read_text(encoding="utf-8")
    cut = text.index("\n", len(text) // 2) + 20  # 20 characters into a row
    path.write_text(text[:cut], encoding="utf-8")
    line = text[:cut].count("\n") + 1
    with pytest.raises(DataError, match=rf"line {line}: the row has \d fields, the header has 9 "
                                        r"\(a file cut short, or a lost separator\); restore the file"):
        _open(world)


def test_a_lost_separator_in_the_flights_is_refused(world: Path) -> None:
    path = world / FLIGHTS
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[30] = lines[30].replace(",", "", 1)
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DataError, match=r"Flights_2022\.csv, line 31: the row has 8 fields, the header has 9"):
        _open(world)


def test_a_quote_left_open_at_the_end_is_refused(world: Path) -> None:
    path = world / FLIGHTS
    text = path.read_text(encoding="utf-8")
    last = text.rstrip("\n").rindex("\n") + 1
    path.write_text(text[:last] + '"' + text[last:], encoding="utf-8")
    with pytest.raises(DataError, match="quoted value runs to the end of the file"):
        _open(world)
    path.write_text(text, encoding="utf-8")
    hotels = world / HOTELS
    hotels.write_text(hotels.read_text(encoding="utf-8") + '9999,"Cut', encoding="utf-8")
    with pytest.raises(DataError, match="quoted value runs to the end of the file"):
        _open(world)


@pytest.mark.parametrize("rel, row, column, value, message", [
    (HOTELS, 12, "price", "12O.0", r"line 13: column 'price' holds '12O.0', which is not a number"),
    (HOTELS, 12, "maximum occupancy", "0", r"line 13: column 'maximum occupancy' holds 0, which is below 1"),
    (HOTELS, 3, "minimum nights", "two", r"line 4: column 'minimum nights' holds 'two', which is not a number"),
    (FLIGHTS, 77, "Price", "$63", r"line 78: column 'Price' holds '\$63', which is not a number"),
    (DISTANCES, 5, "distance", "far", r"line 6: column 'distance' holds 'far', which does not read as a distance"),
    ("database/restaurants/clean_restaurant_2022.csv", 9, "Average Cost", "cheap",
     r"line 10: column 'Average Cost' holds 'cheap', which is not a number"),
])
def test_a_value_the_evaluator_computes_with_is_checked(world: Path, rel: str, row: int, column: str, value: str,
                                                        message: str) -> None:
    """Before, a price typed as text made the evaluator multiply a string (or raise) at the first plan,
    and a maximum occupancy of 0 raised ZeroDivisionError there."""
    _set_cell(world / rel, row, column, value)
    with pytest.raises(DataError, match=message + r".*; restore the file from the TravelPlanner release, "
                                                  r"or correct that line"):
        _open(world)


def test_a_city_list_cut_in_a_name_is_refused(world: Path) -> None:
    path = world / CITIES
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.index("\n", 20) - 3], encoding="utf-8")
    with pytest.raises(DataError, match=r"citySet\.txt: the city '.*' has no state in .*citySet_with_states\.txt"):
        _open(world)


def test_a_missing_column_is_refused(world: Path) -> None:
    _write_rows(world / HOTELS, [r[:-1] for r in _rows(world / HOTELS)])
    with pytest.raises(DataError, match=r"missing column\(s\) \['city'\]"):
        _open(world)


def test_an_empty_table_or_list_is_refused(world: Path, pristine: Path) -> None:
    _write_rows(world / HOTELS, _rows(world / HOTELS)[:1])
    with pytest.raises(DataError, match=r"accommodations_2022\.csv: the file has no rows after the header"):
        _open(world)
    shutil.copy(pristine / HOTELS, world / HOTELS)
    (world / CITY_STATES).write_text("\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"citySet_with_states\.txt: the file holds no lines"):
        _open(world)


def test_blank_lines_are_skipped_as_pandas_skips_them(world: Path, pristine: Path) -> None:
    """A blank line is no row (pandas skips it, and its row labels do not count it)."""
    expected = [(c, _open(pristine).restaurant_labels(c)) for c in _open(pristine).cities]
    world_mod._OPEN.clear()
    path = world / "database/restaurants/clean_restaurant_2022.csv"
    lines = path.read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join(lines[:5] + ["", ""] + lines[5:]), encoding="utf-8")
    assert [(c, _open(world).restaurant_labels(c)) for c in _open(world).cities] == expected
