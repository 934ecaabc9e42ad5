"""The flights table: millions of rows, stored column-wise in numpy files and indexed.

Rows are kept sorted by (origin, destination, date) with ties in file order, so one
route-date is a contiguous slice found by binary search over its packed key. A second
permutation orders rows by flight number (ties in file order) for the evaluator's lookups.
The arrays are memory-mapped, so opening a world reads only a small header.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from agentgym.envs.travelplanner.world._columnar import encode_csv
from agentgym.envs.travelplanner.world._csv import column_converter
from agentgym.envs.travelplanner.world._integrity import MAX_FLIGHT_NUMBER_BYTES, NUMERIC

__all__ = ["FLIGHT_COLUMNS", "FlightTable", "build_flight_table"]

FLIGHT_COLUMNS = (
    "Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime",
    "FlightDate", "OriginCityName", "DestCityName", "Distance",
)
_NUMBER, _PRICE, _ORIGIN, _DEST, _DATE = 0, 1, 6, 7, 5


def _mapped(path: Path) -> np.ndarray:
    return np.load(path, mmap_mode="r", allow_pickle=False).view(np.ndarray)


class FlightTable:
    """Read-only flights with O(log n) lookups by route-date and by flight number."""

    def __init__(self, folder: Path) -> None:
        meta = json.loads((folder / "meta.json").read_text())
        vocab = {int(k): v for k, v in meta["vocab"].items()}
        # Plain ndarray views of the maps: same pages, without np.memmap's per-index Python overhead.
        self._records = _mapped(folder / "records.npy")
        self._keys = _mapped(folder / "keys.npy")
        self._starts = _mapped(folder / "starts.npy")
        self._by_number = _mapped(folder / "by_number.npy")
        self._sorted_numbers = _mapped(folder / "sorted_numbers.npy")
        self._categories = sorted(vocab.items())
        self._vocab = vocab
        self._city_code = {c: i for i, c in enumerate(vocab[_ORIGIN])}
        self._date_code = {d: i for i, d in enumerate(vocab[_DATE])}
        self._n_cities, self._n_dates = max(len(vocab[_ORIGIN]), 1), max(len(vocab[_DATE]), 1)
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
    """Parse the official flights CSV into the column files under ``folder`` (streaming, via pyarrow)."""
    enc = encode_csv(csv_path, FLIGHT_COLUMNS[1:], key=FLIGHT_COLUMNS[0], key_bytes=MAX_FLIGHT_NUMBER_BYTES,
                     shared=(FLIGHT_COLUMNS[_ORIGIN], FLIGHT_COLUMNS[_DEST]), numeric=NUMERIC["flights"])
    vocabs = [[]] + [enc.vocab[c] for c in FLIGHT_COLUMNS[1:]]
    # What pandas also saw in each column before dropna(): a missing cell makes an int column float.
    seen_too = [[""] * (c in enc.with_na) for c in FLIGHT_COLUMNS]
    codes = [enc.keys] + [enc.codes.pop(c) for c in FLIGHT_COLUMNS[1:]]
    del enc
    n = len(codes[0])
    n_cities, n_dates = max(len(vocabs[_ORIGIN]), 1), max(len(vocabs[_DATE]), 1)
    key = codes[_ORIGIN].astype(np.int64)
    key *= n_cities
    key += codes[_DEST]
    key *= n_dates
    key += codes[_DATE]
    folder.mkdir(parents=True, exist_ok=True)
    # Two chains share the work (numpy's sorts, gathers and writes release the GIL): the flight
    # numbers' order needs no route-date order, so it is sorted while the keys are.
    with ThreadPoolExecutor(max_workers=1) as pool:
        by_file = pool.submit(_stable_bytes_order, codes[_NUMBER])
        order, keys = _stable_order(key)  # consumes key
        numbers = pool.submit(_write_number_index, folder, codes[_NUMBER], order, by_file)
        first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if n else np.empty(0, np.int64)
        np.save(folder / "keys.npy", keys[first], allow_pickle=False)
        np.save(folder / "starts.npy", np.append(first, n).astype(np.int64), allow_pickle=False)
        del keys, first
        codes[_NUMBER] = codes[_NUMBER][order]  # now in table order, like every stored column
        kinds, stored, meta_vocab = _store_columns(codes, vocabs, seen_too)
        _write_records(folder / "records.npy", stored, order)
        del stored, codes
        numbers.result()
    (folder / "meta.json").write_text(json.dumps({"kinds": kinds, "vocab": meta_vocab}), encoding="utf-8")


def _write_number_index(folder: Path, numbers: np.ndarray, order: np.ndarray, by_file: Future) -> None:
    """Table positions ordered by flight number, ties by position in the original file, and the
    numbers in that order; ``by_file`` holds the file positions in that order."""
    table_of = np.empty(len(numbers), dtype=_index_dtype(len(numbers)))
    table_of[order] = np.arange(len(numbers), dtype=table_of.dtype)  # file position -> table position
    by_file = by_file.result()
    np.save(folder / "by_number.npy", table_of[by_file], allow_pickle=False)
    del table_of
    np.save(folder / "sorted_numbers.npy", numbers[by_file], allow_pickle=False)


def _add_positions(key: np.ndarray, chunk: int = 1 << 20) -> None:
    """``key += np.arange(len(key))`` without a second array as long as ``key``."""
    steps = np.arange(min(chunk, len(key)), dtype=key.dtype)
    for lo in range(0, len(key), chunk):
        part = key[lo : lo + chunk]
        part += steps[: len(part)]
        part += lo


def _stable_order(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, key[order])`` with ``order = np.argsort(key, kind="stable")``, for non-negative
    int64 keys; ``key`` is used as scratch space."""
    n = len(key)
    if n < 2 or bool(np.all(key[:-1] <= key[1:])):
        return np.arange(n, dtype=_index_dtype(n)), key
    if int(key.max()) < (2**62) // n:
        # key * n + position is unique, so an unstable (SIMD) sort gives the stable order.
        key *= n
        _add_positions(key)
        key.sort()
        sorted_keys = key // n
        key %= n
        return key.astype(_index_dtype(n)), sorted_keys
    order = np.argsort(key, kind="stable")
    return order.astype(_index_dtype(n)), key[order]


def _stable_bytes_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` for an ``S<w>`` array, without comparing strings.

    Zero-padded bytes compare position by position, so with each position's byte offset by the
    smallest one there, a value reads as one mixed-radix integer with the same order. When those
    integers, times ``n``, fit in 63 bits (``F`` + 7 digits: 10**7 values), one unstable (SIMD)
    sort of ``integer * n + position`` gives the stable order."""
    n, width = len(values), values.dtype.itemsize
    if n < 2:
        return np.arange(n, dtype=np.int64)
    columns = np.ascontiguousarray(values.view(np.uint8).reshape(n, width).T)  # a row per byte position
    low, high = columns.min(axis=1).astype(np.int64), columns.max(axis=1).astype(np.int64)
    radix = high - low + 1
    if math.prod(radix.tolist()) * n >= 2**62:
        return np.argsort(values, kind="stable")
    key = np.zeros(n, dtype=np.int64)
    offset = 0
    for j in np.flatnonzero(radix > 1):  # a byte that never varies adds nothing
        key *= radix[j]
        key += columns[j]
        offset = offset * int(radix[j]) + int(low[j])
    del columns
    key -= offset
    key *= n
    _add_positions(key)
    key.sort()
    key %= n
    return key


def _index_dtype(n: int):
    return np.uint32 if n < 2**32 else np.int64


def _store_columns(codes: list[np.ndarray], vocabs: list[list[str]], seen_too: list[list[str]]):
    """Every column but the number is stored as codes into a vocabulary of pandas-typed values
    (pandas types a column before dropping rows: one missing cell makes an int column float)."""
    kinds, stored, meta_vocab = ["bytes"], [codes[_NUMBER]], {}
    for j in range(1, len(codes)):
        vocab = vocabs[j]
        convert = column_converter([*vocab, *seen_too[j]])
        if j in (_ORIGIN, _DEST, _DATE):
            kinds.append("category")  # looked up by their text
            meta_vocab[j] = list(vocab)
        else:
            kinds.append(convert.kind)
            meta_vocab[j] = [convert(v) for v in vocab]
        stored.append(codes[j].astype(np.uint16 if len(vocab) <= 2**16 else np.uint32, copy=False))
    return kinds, stored, meta_vocab


def _write_records(path: Path, columns: list[np.ndarray], order: np.ndarray, chunk: int = 1 << 18) -> None:
    """One record per table row, written a chunk at a time (the whole table is never in memory twice).

    ``columns[0]`` (the number) is already in table order; the others are in file order and are
    gathered through ``order``."""
    dtype = np.dtype([(f"c{j}", c.dtype) for j, c in enumerate(columns)])
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (len(order),)}
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        for lo in range(0, len(order), chunk):
            rows = order[lo : lo + chunk]
            block = np.empty(len(rows), dtype=dtype)
            block["c0"] = columns[0][lo : lo + chunk]
            for j in range(1, len(columns)):
                block[f"c{j}"] = columns[j][rows]
            f.write(memoryview(block).cast("B"))
