"""The streaming pyarrow flights parser keeps exactly the rows and values of ``pd.read_csv(...).dropna()``.

Hypothesis writes small flights files with the awkward cells real files may hold (pandas' missing
markers, quoted commas and newlines, an extra column, CRLF line ends, short rows, ties between
flight numbers) and the table built from them is compared with pandas row by row. Where pandas
would drop a row without a word (a short row), the build refuses the file instead.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym.envs.travelplanner.world import _columnar
from agentgym.envs.travelplanner.world._flights import FLIGHT_COLUMNS, FlightTable, build_flight_table
from agentgym.errors import DataError

pd = pytest.importorskip("pandas")

_POOLS = {
    "Flight Number": ["F0001", "F0002", "F10", "F9", "F0001", "NA", "Fé7"],
    "Price": ["120", "75", "3", "", "nan"],
    "DepTime": ["09:05", "10:00", "23:59", "NULL"],
    "ArrTime": ["11:15", "12:00", "00:30"],
    "ActualElapsedTime": ["2 hours 10 minutes", "0 hours 59 minutes"],
    "FlightDate": ["2022-03-01", "2022-03-02", "N/A"],
    "OriginCityName": ["Rockford", "St. Petersburg", "Fort, Myers", "New\nYork", "null"],
    "DestCityName": ["Rockford", "St. Petersburg", "Fort, Myers", "New\nYork"],
    "Distance": ["100.0", "7", "2.5e3", "-1.#IND"],
}
_FLOATY_PRICE = ["120.5", "99"]
_TEXT_DISTANCE = ["far", "100.0"]


@st.composite
def flight_files(draw):
    header = list(FLIGHT_COLUMNS)
    extra = draw(st.booleans())
    if extra:
        header.insert(draw(st.integers(0, len(header))), "Note")
    pools = dict(_POOLS)
    if draw(st.booleans()):
        pools["Price"] = _FLOATY_PRICE
    if draw(st.booleans()):
        pools["Distance"] = _TEXT_DISTANCE
    pools["Note"] = ["ok", "", "fine, really"]
    rows = []
    for _ in range(draw(st.integers(0, 40))):
        row = [draw(st.sampled_from(pools[c])) for c in header]
        if draw(st.integers(0, 15)) == 0:
            row = row[: draw(st.integers(1, len(row) - 1))]  # a short row: pandas pads it with NaN
        rows.append(row)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def _pandas_rows(path: Path) -> list[tuple]:
    frame = pd.read_csv(path).dropna()[list(FLIGHT_COLUMNS)]
    return [tuple(r) for r in frame.itertuples(index=False, name=None)]


def _as_python(value):
    return value.item() if hasattr(value, "item") else value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=flight_files())
def test_rows_and_values_equal_pandas(tmp_path_factory, text: str) -> None:
    folder = tmp_path_factory.mktemp("flights")
    path = folder / "clean_Flights_2022.csv"
    path.write_bytes(text.encode("utf-8"))
    expected = [tuple(_as_python(v) for v in r) for r in _pandas_rows(path)]
    width = len(next(csv.reader(io.StringIO(text))))
    if any(len(r) < width for r in list(csv.reader(io.StringIO(text)))[1:] if r):
        with pytest.raises(DataError, match="the header has"):
            build_flight_table(path, folder / "table")
        return
    build_flight_table(path, folder / "table")
    table = FlightTable(folder / "table")
    assert table.n_rows == len(expected)
    for origin, dest, date in {(r[6], r[7], r[5]) for r in expected}:
        want = [r for r in expected if (r[6], r[7], r[5]) == (origin, dest, date)]
        got = table.route_date(origin, dest, date)
        assert got == want and [tuple(map(type, r)) for r in got] == [tuple(map(type, r)) for r in want]
    for number in {r[0] for r in expected}:
        assert table.by_number(number) == [r for r in expected if r[0] == number]


def test_a_row_longer_than_the_header_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "flights.csv"
    path.write_text(",".join(FLIGHT_COLUMNS) + "\nF1,1,09:00,10:00,1 hours 0 minutes,2022-03-01,A,B,5.0,extra\n")
    with pytest.raises(DataError, match="has 10 fields, the header has 9"):
        build_flight_table(path, tmp_path / "table")


def test_a_missing_column_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "flights.csv"
    path.write_text("Flight Number,Price\nF1,1\n")
    with pytest.raises(DataError, match="missing column 'DepTime'"):
        build_flight_table(path, tmp_path / "table")


def test_records_are_cut_between_rows_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With chunks far smaller than a row, quoted newlines still never split a record."""
    monkeypatch.setattr(_columnar, "_CHUNK_BYTES", 7)
    header = ",".join(FLIGHT_COLUMNS)
    body = "".join(f'F{i},{i},09:00,10:00,"1 hours\n0 minutes",2022-03-01,"New\nYork","A, ""B""",5.0\n'
                   for i in range(30))
    path = tmp_path / "flights.csv"
    path.write_text(header + "\n" + body)
    build_flight_table(path, tmp_path / "table")
    table = FlightTable(tmp_path / "table")
    assert table.route_date("New\nYork", 'A, "B"', "2022-03-01") == [
        tuple(_as_python(v) for v in r) for r in _pandas_rows(path)]


def test_many_chunks_in_flight_keep_every_row_in_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small chunks, so several are parsed at once from the buffer ring: the rows and their
    order still equal pandas' (a buffer reused too early would corrupt or reorder rows)."""
    monkeypatch.setattr(_columnar, "_CHUNK_BYTES", 4096)
    rng = __import__("random").Random(3)
    lines = [",".join(FLIGHT_COLUMNS)]
    for i in range(3000):
        cells = [rng.choice(_POOLS[c]) if c != "Flight Number" else f"F{rng.randint(0, 400):04d}" for c in FLIGHT_COLUMNS]
        lines.append(",".join(f'"{c}"' if ("," in c or "\n" in c) else c for c in cells))
    path = tmp_path / "flights.csv"
    path.write_text("\n".join(lines) + "\n")
    build_flight_table(path, tmp_path / "table")
    table = FlightTable(tmp_path / "table")
    expected = [tuple(_as_python(v) for v in r) for r in _pandas_rows(path)]
    assert table.n_rows == len(expected) > 300
    for number in {r[0] for r in expected}:
        assert table.by_number(number) == [r for r in expected if r[0] == number]


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.binary(max_size=6).map(lambda b: b.rstrip(b"\0")), max_size=60), digits=st.booleans())
def test_flight_numbers_sort_like_a_stable_argsort(values: list[bytes], digits: bool) -> None:
    """The mixed-radix integer sort orders numbers (and ties, by position) as numpy's stable argsort
    does, both when the radix fits (digits) and on the fallback (arbitrary bytes)."""
    np = pytest.importorskip("numpy")
    from agentgym.envs.travelplanner.world._flights import _stable_bytes_order

    if digits:
        values = [b"F" + bytes(48 + c % 10 for c in v) for v in values]
    array = np.array(values, dtype="S7") if values else np.empty(0, dtype="S7")
    assert _stable_bytes_order(array).tolist() == np.argsort(array, kind="stable").tolist()
