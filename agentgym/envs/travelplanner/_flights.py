"""The flights table: millions of rows, stored column-wise in numpy files and indexed.

Rows are kept sorted by (origin, destination, date) with ties in file order, so one
route-date is a contiguous slice found by binary search over its packed key. A second
permutation orders rows by flight number (ties in file order) for the evaluator's lookups.
The arrays are memory-mapped, so opening a world reads only a small header.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from agentgym.envs.travelplanner._csv import NA_STRINGS, column_converter
from agentgym.errors import DataError

__all__ = ["FLIGHT_COLUMNS", "FlightTable", "build_flight_table"]

FLIGHT_COLUMNS = (
    "Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime",
    "FlightDate", "OriginCityName", "DestCityName", "Distance",
)
_NUMBER, _PRICE, _ORIGIN, _DEST, _DATE = 0, 1, 6, 7, 5


def _mapped(path: Path) -> np.ndarray:
    return np.load(path, mmap_mode="r").view(np.ndarray)


class FlightTable:
    """Read-only flights with O(log n) lookups by route-date and by flight number."""

    def __init__(self, folder: Path) -> None:
        meta = json.loads((folder / "meta.json").read_text())
        vocab = {int(k): v for k, v in meta["vocab"].items()}
        # Plain ndarray views of the maps: same pages, without np.memmap's per-index Python overhead.
        self._records = _mapped(folder / "records.npy")
        self._keys = np.load(folder / "keys.npy")
        self._starts = np.load(folder / "starts.npy")
        self._by_number = _mapped(folder / "by_number.npy")
        self._sorted_numbers = _mapped(folder / "sorted_numbers.npy")
        self._categories = sorted(vocab.items())
        self._vocab = vocab
        self._city_code = {c: i for i, c in enumerate(vocab[_ORIGIN])}
        self._date_code = {d: i for i, d in enumerate(vocab[_DATE])}
        self._n_cities, self._n_dates = len(vocab[_ORIGIN]), len(vocab[_DATE])
        self.n_rows = int(self._records.shape[0])

    def route_date(self, origin: str, dest: str, date: str) -> list[tuple[Any, ...]]:
        """Rows for one route on one date, in file order."""
        o, d, t = self._city_code.get(origin), self._city_code.get(dest), self._date_code.get(date)
        if o is None or d is None or t is None:
            return []
        key = (o * self._n_cities + d) * self._n_dates + t
        i = int(np.searchsorted(self._keys, key))
        if i == len(self._keys) or self._keys[i] != key:
            return []
        return self._decode(self._records[int(self._starts[i]) : int(self._starts[i + 1])].tolist())

    def by_number(self, number: str) -> list[tuple[Any, ...]]:
        """All rows with this flight number, in file order."""
        return self._decode(self._number_records(number))

    def price_routes(self, number: str) -> list[tuple[Any, str, str]]:
        """``(price, origin, dest)`` of every row with this flight number, in file order.

        The official evaluator reads only these three columns, so the rest is not decoded."""
        records = self._number_records(number)
        if not records:
            return []
        price, origin, dest = (self._vocab.get(j) for j in (_PRICE, _ORIGIN, _DEST))
        return [(r[_PRICE] if price is None else price[r[_PRICE]], origin[r[_ORIGIN]], dest[r[_DEST]])
                for r in records]

    def _number_records(self, number: str) -> list[tuple[Any, ...]]:
        encoded = number.encode("utf-8", "replace")
        numbers = self._sorted_numbers
        # A longer number cannot be stored; searching with it would make numpy widen (copy)
        # the whole column. Searching with the column's own dtype keeps the search in place.
        if len(encoded) > numbers.dtype.itemsize or encoded.endswith(b"\x00"):
            return []
        target = np.array(encoded, dtype=numbers.dtype)
        lo = int(numbers.searchsorted(target, side="left"))
        hi = int(numbers.searchsorted(target, side="right"))
        if lo == hi:
            return []
        return self._records[self._by_number[lo:hi]].tolist()  # one gather, rows stay in file order

    def _decode(self, records: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        out = []
        for rec in records:
            row = list(rec)
            row[_NUMBER] = row[_NUMBER].decode("utf-8")
            for j, vocab in self._categories:
                row[j] = vocab[row[j]]
            out.append(tuple(row))
        return out


def build_flight_table(csv_path: Path, folder: Path) -> None:
    """Parse the official flights CSV into the column files under ``folder``."""
    header, codes, vocabs = _encode_csv(csv_path)
    picks = [_index_of(header, c, csv_path) for c in FLIGHT_COLUMNS]
    keep = _rows_without_na(codes, vocabs)
    cols = [np.asarray(codes[j], dtype=np.int64)[keep] for j in picks]
    vocabs = [vocabs[j] for j in picks]
    cols, vocabs = _share_city_codes(cols, vocabs)
    order = np.lexsort((np.arange(len(cols[0])), _route_key(cols, vocabs)))
    keys = _route_key(cols, vocabs)[order]
    kinds, stored, meta_vocab = _store_columns([c[order] for c in cols], vocabs)
    folder.mkdir(parents=True, exist_ok=True)
    # One record per row, so a route-date is one contiguous slice of one memory-mapped file.
    records = np.empty(len(keys), dtype=[(f"c{j}", a.dtype) for j, a in enumerate(stored)])
    for j, arr in enumerate(stored):
        records[f"c{j}"] = arr
    np.save(folder / "records.npy", records)
    unique, starts = np.unique(keys, return_index=True)
    np.save(folder / "keys.npy", unique)
    np.save(folder / "starts.npy", np.append(starts, len(keys)).astype(np.int64))
    # Sorted-table positions ordered by flight number, ties by position in the original file.
    by_number = np.lexsort((order, stored[_NUMBER]))
    np.save(folder / "by_number.npy", by_number.astype(np.int64))
    np.save(folder / "sorted_numbers.npy", stored[_NUMBER][by_number])
    (folder / "meta.json").write_text(json.dumps({"kinds": kinds, "vocab": meta_vocab}))


def _encode_csv(path: Path) -> tuple[list[str], list[list[int]], list[list[str]]]:
    """Dictionary-encode every column in one streaming pass."""
    try:
        f = open(path, newline="", encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"missing database file {path}") from None
    with f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise DataError(f"{path} is empty; expected a header row")
        width = len(header)
        maps: list[dict[str, int]] = [{} for _ in header]
        codes: list[list[int]] = [[] for _ in header]
        for lineno, row in enumerate(reader, start=2):
            if len(row) != width:
                if len(row) > width:
                    raise DataError(f"{path}: row {lineno} has {len(row)} fields, the header has {width}")
                row = row + [""] * (width - len(row))
            for j, cell in enumerate(row):
                m = maps[j]
                code = m.get(cell)
                if code is None:
                    code = m[cell] = len(m)
                codes[j].append(code)
    return header, codes, [list(m) for m in maps]


def _index_of(header: list[str], column: str, path: Path) -> int:
    if column not in header:
        raise DataError(f"{path}: missing column {column!r}; found {header}")
    return header.index(column)


def _rows_without_na(codes: list[list[int]], vocabs: list[list[str]]) -> np.ndarray:
    # The official loader drops a row when any of its cells (any column) is missing.
    keep = np.ones(len(codes[0]) if codes else 0, dtype=bool)
    for col, vocab in zip(codes, vocabs):
        na = np.array([v in NA_STRINGS for v in vocab], dtype=bool)
        if na.any():
            keep &= ~na[np.asarray(col, dtype=np.int64)]
    return keep


def _share_city_codes(cols: list[np.ndarray], vocabs: list[list[str]]):
    # Origin and destination share one city vocabulary so a route packs into one int key.
    cities = sorted(set(vocabs[_ORIGIN]) | set(vocabs[_DEST]))
    index = {c: i for i, c in enumerate(cities)}
    for j in (_ORIGIN, _DEST):
        remap = np.array([index[c] for c in vocabs[j]], dtype=np.int64)
        cols[j] = remap[cols[j]] if len(remap) else cols[j]
        vocabs[j] = cities
    return cols, vocabs


def _route_key(cols: list[np.ndarray], vocabs: list[list[str]]) -> np.ndarray:
    n_cities, n_dates = len(vocabs[_ORIGIN]), len(vocabs[_DATE])
    return (cols[_ORIGIN] * n_cities + cols[_DEST]) * n_dates + cols[_DATE]


def _store_columns(cols: list[np.ndarray], vocabs: list[list[str]]):
    kinds, stored, meta_vocab = [], [], {}
    for j, (codes, vocab) in enumerate(zip(cols, vocabs)):
        convert = column_converter(vocab)
        if j == _NUMBER:
            # Flight numbers are searched by value, so they are stored as sortable bytes.
            kinds.append("bytes")
            stored.append(np.array([v.encode("utf-8") for v in vocab], dtype=bytes)[codes])
        elif j in (_ORIGIN, _DEST, _DATE) or convert.kind == "str":
            kinds.append("category")  # few distinct values: times, dates, city names
            stored.append(codes.astype(np.int32))
            meta_vocab[j] = [str(v) for v in vocab]
        else:
            kinds.append(convert.kind)
            dtype = np.int64 if convert.kind == "int" else np.float64
            stored.append(np.array([convert(v) for v in vocab], dtype=dtype)[codes])
    return kinds, stored, meta_vocab
