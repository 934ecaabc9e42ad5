"""Stream a large CSV through pyarrow into per-column dictionary codes, with no Python object per row.

The flights table has millions of rows but few distinct values per column (times, dates, cities,
prices), so each column becomes small integer codes into a vocabulary of its distinct cells. Each
block pyarrow parses is dictionary-encoded in C++, and only the block's distinct values are mapped
to the running vocabulary. One column (the flight number) is unique per row; it is kept as
fixed-width bytes instead.

Rows are filtered as the official loader's ``pd.read_csv(...).dropna()`` does: a row is dropped when
any of its cells, in any column, is one of pandas' missing-value strings. Each block is checked as
``_integrity`` describes while it is encoded (a row wider or narrower than the header, a cell over
the size limits, a ``numeric`` column cell that is not a number, a quote left open at the end):
each is a :class:`DataError` naming the line, found by re-reading the file only then.
"""

from __future__ import annotations

import codecs
import csv
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentgym.envs.travelplanner.world._csv import NA_STRINGS, NUMBER, csv_problem, width_problem
from agentgym.envs.travelplanner.world._integrity import MAX_CELL_CHARS, damaged, not_utf8, unreadable
from agentgym.errors import DataError, DependencyNotInstalled, short_repr

__all__ = ["EncodedColumns", "encode_csv"]

_CHUNK_BYTES = 8 << 20  # read, parsed and encoded at a time: bounds the memory of the parse
_PARSERS = 2  # chunks parsed at once (in threads)


@dataclass
class _Vocabulary:
    """Distinct cells in order of first appearance; shared by columns that must share codes."""

    values: list[str] = field(default_factory=list)
    _array: object = None  # the values as one pyarrow array, for C++ lookups

    def codes_for(self, pa, pc, distinct) -> np.ndarray:
        """Global codes of a block's distinct values (appending the new ones)."""
        if self._array is None:
            self._array = _strings([], pa)
        pos = pc.index_in(distinct, value_set=self._array)
        if pos.null_count:
            fresh = distinct.filter(pos.is_null())
            self.values.extend(fresh.to_pylist())
            self._array = pa.concat_arrays([self._array, fresh])
            pos = pc.index_in(distinct, value_set=self._array)
        dtype = np.uint16 if len(self.values) <= 2**16 else np.uint32
        return _int32s(pos).astype(dtype)


@dataclass
class EncodedColumns:
    """The kept rows of a CSV, column by column, in file order."""

    codes: dict[str, np.ndarray]  # column -> uint16/uint32 codes into ``vocab[column]``
    vocab: dict[str, list[str]]  # column -> distinct present cells (of every row, kept or not)
    with_na: set[str]  # columns with a missing cell in some row: pandas types them as if kept
    keys: np.ndarray  # the key column as fixed-width bytes
    n_file_rows: int


def encode_csv(path: Path, columns: Sequence[str], *, key: str, key_bytes: int, shared: Sequence[str] = (),
               numeric: Sequence[str] = ()) -> EncodedColumns:
    """Dictionary-encode ``columns`` of ``path`` and keep ``key`` as bytes (at most ``key_bytes``
    each); ``shared`` columns share one vocabulary (so their codes compare); ``numeric`` columns
    must hold numbers (or missing cells)."""
    pa, pc, pcsv = _pyarrow()
    header = _header(path)
    for name in (*columns, key):
        if name not in header:
            raise DataError(f"{path}: missing column {name!r}; found {header}")
    shared_vocab = _Vocabulary()
    vocabs = {c: shared_vocab if c in shared else _Vocabulary() for c in columns}
    out = {c: _Growing() for c in (*columns, key)}
    with_na: set[str] = set()
    n_rows = 0
    for table, share in _tables(path, header, set(vocabs), pa, pcsv):
        _check_block(path, table, header, n_rows, key, key_bytes, numeric, pc)
        n_rows += table.num_rows
        na = None  # rows with a missing cell in any column: dropna() drops them
        for name, col in zip(header, table.columns):
            if col.null_count:
                with_na.add(name)
                missing = _nulls(col)
                na = missing if na is None else na | missing
        block = {name: _codes(table.column(header.index(name)), vocab, pa, pc) for name, vocab in vocabs.items()}
        block[key] = _concat([_fixed_bytes(c) for c in table.column(header.index(key)).chunks], "S1")
        keep = None if na is None else ~na
        for name, values in block.items():
            out[name].append(values if keep is None else values[keep], expect=share)
        del table, block
        pa.default_memory_pool().release_unused()  # keep the parse's peak at a few chunks
    return EncodedColumns(
        codes={c: out[c].array() for c in columns},
        vocab={c: list(v.values) for c, v in vocabs.items()},
        with_na=with_na,
        keys=out[key].array(),
        n_file_rows=n_rows,
    )


def _check_block(path: Path, table, header: list[str], before: int, key: str, key_bytes: int,
                 numeric: Sequence[str], pc) -> None:
    """Refuse a block with a cell over the size limits or a non-number in a ``numeric`` column
    (before anything is built from it: a long key would widen the whole key column)."""
    for name, col in zip(header, table.columns):
        # Flight numbers are stored at one width: their bound is in bytes (and far smaller).
        measure, limit, unit = ((pc.binary_length, key_bytes, "bytes") if name == key
                                else (pc.utf8_length, MAX_CELL_CHARS, "characters"))
        at = 0  # rows of this column's earlier chunks
        for chunk in col.chunks:
            size, row = _longest(chunk, measure)
            if size > limit:
                if hasattr(chunk, "dictionary"):
                    row = _first_row_of(chunk, row)
                raise damaged(path, _line_of(path, before + at + row),
                              f"column {name!r} holds a value of {size:,} {unit}; the most allowed is {limit:,}")
            if name in numeric and len(chunk.dictionary):
                ok = pc.match_substring_regex(chunk.dictionary, f"^(?:{NUMBER})$")
                if not pc.all(ok).as_py():
                    bad = ok.to_pylist().index(False)
                    raise damaged(path, _line_of(path, before + at + _first_row_of(chunk, bad)),
                                  f"column {name!r} holds {short_repr(chunk.dictionary[bad].as_py())}, which is not "
                                  f"a number (the evaluator computes with this column)")
            at += len(chunk)


def _longest(chunk, measure) -> tuple[int, int]:
    """``(size, position)`` of the chunk's longest cell by ``measure`` (a pyarrow length kernel);
    the position is the dictionary entry's in a dictionary chunk."""
    values = chunk.dictionary if hasattr(chunk, "dictionary") else chunk
    if not len(values):
        return 0, 0
    lengths = _int32s(measure(values))
    if values.null_count:  # what lies under a null is unspecified
        lengths = np.where(_valid(values), lengths, 0)
    i = int(lengths.argmax())
    return int(lengths[i]), i


def _first_row_of(chunk, entry: int) -> int:
    """The first row of a dictionary chunk that holds dictionary entry ``entry``."""
    return int(np.flatnonzero((_int32s(chunk.indices) == entry) & _valid(chunk))[0])


def _codes(col, vocab: _Vocabulary, pa, pc) -> np.ndarray:
    """Global codes of one dictionary-typed parsed column (a missing cell gets some valid code;
    its row is dropped)."""
    if col.num_chunks == 0:
        return np.empty(0, dtype=np.uint16)
    parts = []
    for chunk in col.chunks:
        mapping = vocab.codes_for(pa, pc, chunk.dictionary)
        local = _int32s(chunk.indices)
        if chunk.null_count:  # the index under a null is unspecified
            local = np.where(_valid(chunk), local, 0)
            if not len(mapping):
                mapping = np.zeros(1, dtype=np.uint16)
        parts.append(mapping[local])
    return _concat(parts, np.uint16)


class _Growing:
    """An array appended to in place (capacity from the expected row count), so the final column
    is never held twice, as a list of parts and their concatenation would be."""

    def __init__(self) -> None:
        self.data: np.ndarray | None = None
        self.n = 0

    def append(self, values: np.ndarray, *, expect: float) -> None:
        need = self.n + len(values)
        data = self.data
        if data is None or need > len(data) or values.dtype != data.dtype:
            dtype = values.dtype if data is None else np.promote_types(data.dtype, values.dtype)
            size = need if data is None else max(need, int(len(data) * 1.25))
            grown = np.empty(max(size, int(expect)), dtype=dtype)
            if data is not None:
                grown[: self.n] = data[: self.n]
            self.data = data = grown
        data[self.n : need] = values
        self.n = need

    def array(self) -> np.ndarray:
        return np.empty(0, dtype=np.uint16) if self.data is None else self.data[: self.n]


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover - pyarrow is a core dependency
        raise DependencyNotInstalled(
            "reading the TravelPlanner flights table needs pyarrow: pip install pyarrow") from None
    return pa, pc, pcsv


def _header(path: Path) -> list[str]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            header = next(csv.reader(f, strict=True), None)
    except OSError as exc:
        raise unreadable(path, exc) from None
    except UnicodeDecodeError:
        raise _bad_utf8(path) from None
    except csv.Error as exc:
        raise damaged(path, 1, csv_problem(exc)) from None
    if not header:
        raise DataError(f"{path} is empty; expected a header row")
    return header


def _tables(path: Path, header: list[str], categorical: set[str], pa, pcsv):
    """The file's records as pyarrow tables of about ``_CHUNK_BYTES`` each (header skipped), each with
    the number of rows the whole file is expected to hold. A row wider or narrower than the header
    is refused (pandas would pad a short one and drop it without a word)."""
    bad_widths: list[str] = []

    def invalid(row) -> str:
        bad_widths.append(width_problem(row.actual_columns, row.expected_columns))
        return "error"

    # One block per chunk; _PARSERS chunks are parsed at once in worker threads (pyarrow releases
    # the GIL) while the caller encodes the oldest one.
    parse_options = pcsv.ParseOptions(newlines_in_values=True, invalid_row_handler=invalid)
    convert_options = pcsv.ConvertOptions(
        # The converter hashes each cell into its block's dictionary instead of copying it, and
        # marks pandas' missing-value strings as nulls as it goes.
        column_types={name: pa.dictionary(pa.int32(), pa.string()) if name in categorical else pa.string()
                      for name in header},
        strings_can_be_null=True, quoted_strings_can_be_null=True, null_values=sorted(NA_STRINGS))
    size = max(path.stat().st_size, 1)

    def parse(chunk):
        read_options = pcsv.ReadOptions(column_names=header, block_size=len(chunk) + 1, use_threads=False)
        table = pcsv.read_csv(pa.py_buffer(chunk), read_options=read_options, parse_options=parse_options,
                              convert_options=convert_options)
        return table, table.num_rows * size / max(len(chunk), 1) * 1.02  # rows expected in the file

    try:
        with ThreadPoolExecutor(max_workers=_PARSERS) as pool:
            pending: deque = deque()
            for chunk in _record_chunks(path, buffers=_PARSERS + 1):
                pending.append(pool.submit(parse, chunk))
                if len(pending) > _PARSERS:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
    except pa.ArrowInvalid as exc:
        if bad_widths:
            width = len(header)
            raise damaged(path, _line_of(path, None, width=width), bad_widths[0]) from None
        if "UTF8" in str(exc) or "UTF-8" in str(exc):
            raise _bad_utf8(path) from None
        raise damaged(path, None, f"not valid CSV ({exc})") from None
    except OSError as exc:
        raise unreadable(path, exc) from None


def _line_of(path: Path, record: int | None, *, width: int = 0) -> int | None:
    """The line that row ``record`` (0: the first after the header), or the first row whose width
    is not ``width``, starts on. Only errors need it, so it re-reads the file (with the process's
    CSV field limit lifted meanwhile)."""
    limit = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)  # the row may hold the cell that was too long
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
            reader = csv.reader(f)
            next(reader, None)
            start, i = reader.line_num + 1, 0
            for r in reader:
                if r:
                    if i == record or (record is None and len(r) != width):
                        return start
                    i += 1
                start = reader.line_num + 1
    except (OSError, csv.Error):
        pass
    finally:
        csv.field_size_limit(limit)
    return None


def _bad_utf8(path: Path) -> DataError:
    """The error for a file that is not UTF-8, naming the line and byte (found by re-reading it)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    line = 1
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                try:
                    decoder.decode(block)
                except UnicodeDecodeError as exc:
                    return not_utf8(path, bytes(exc.object), exc, first_line=line)
                line += block.count(b"\n")
    except OSError as exc:
        return unreadable(path, exc)
    return damaged(path, None, "a cell is not UTF-8 text")


def _record_chunks(path: Path, buffers: int):
    """The bytes after the header, cut only between records (at a newline outside quotes).

    Chunks rotate through ``buffers`` buffers: a chunk stays valid until ``buffers - 1`` more
    have been read (pyarrow copies what it parses, so the caller must be done with it by then)."""
    ring = [bytearray(_CHUNK_BYTES) for _ in range(buffers)]
    at = 0
    buf, view = ring[0], memoryview(ring[0])
    start, end, first = 0, 0, True  # buf[start:end] holds bytes not yet yielded
    with open(path, "rb", buffering=0) as f:
        while True:
            if end == len(buf):  # one record longer than the buffer: a bigger one (views of the old may live on)
                grown = bytearray(2 * len(buf))
                grown[:end] = buf[:end]
                buf = ring[at] = grown
                view = memoryview(grown)
            n = f.readinto(view[end:])
            end += n
            if first:
                head = _first_record_end(buf, end)
                if head < 0 and n:
                    continue
                start, first = (end if head < 0 else head), False
            cut = _last_record_end(buf, start, end) if n else end
            if not n and buf.count(b'"', start, end) % 2:
                raise damaged(path, None, "the last row's quoted value runs to the end of the file "
                                          "(a file cut short, or a stray quote)")
            if cut > start:
                yield view[start:cut]
                # The unfinished record moves to the next buffer; this one stays as it is.
                at = (at + 1) % buffers
                need = max(len(buf), 2 * (end - cut))
                if len(ring[at]) < need:
                    ring[at] = bytearray(need)
                ring[at][: end - cut] = buf[cut:end]
                buf, view, start, end = ring[at], memoryview(ring[at]), 0, end - cut
            if not n:
                return


def _record_ends(buf: bytearray, lo: int, hi: int) -> np.ndarray:
    """Positions (absolute) of the newlines in buf[lo:hi] that end a record: an even number of
    quotes lies between ``lo`` (a record start) and them."""
    data = np.frombuffer(buf, dtype=np.uint8, count=hi - lo, offset=lo)
    ends = np.flatnonzero(data == 10)
    if len(ends) and buf.find(b'"', lo, hi) >= 0:
        quotes = np.cumsum(data == 34, dtype=np.int64)
        ends = ends[quotes[ends] % 2 == 0]
    return ends + lo


def _last_record_end(buf: bytearray, lo: int, hi: int) -> int:
    """Position just after the last record-ending newline in buf[lo:hi], or ``lo`` if none."""
    if buf.find(b'"', lo, hi) < 0:
        pos = buf.rfind(b"\n", lo, hi)
        return pos + 1 if pos >= 0 else lo
    ends = _record_ends(buf, lo, hi)
    return int(ends[-1]) + 1 if len(ends) else lo


def _first_record_end(buf: bytearray, hi: int) -> int:
    """Position just after the header record, or -1 when buf[:hi] does not hold all of it."""
    pos = buf.find(b"\n", 0, hi)
    if pos < 0:
        return -1
    if buf.find(b'"', 0, pos) < 0:
        return pos + 1
    ends = _record_ends(buf, 0, hi)
    return int(ends[0]) + 1 if len(ends) else -1


def _strings(values: list[str], pa):
    """A pyarrow string array built from buffers (``pa.array`` on a list imports pandas to sniff it)."""
    data = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    return pa.StringArray.from_buffers(len(data), pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data)))


def _int32s(arr) -> np.ndarray:
    """A null-free pyarrow int32 array as a numpy view of its buffer."""
    if str(arr.type) != "int32":  # pragma: no cover - dictionary indices, lengths and positions are int32
        raise TypeError(f"expected an int32 array, got {arr.type}")
    return np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr), offset=arr.offset * 4)


def _valid(chunk) -> np.ndarray:
    """A pyarrow array's validity as a numpy bool array, read from its bit buffer (pyarrow's own
    copying ``to_numpy`` imports pandas)."""
    bits = chunk.buffers()[0]
    if bits is None:
        return np.ones(len(chunk), dtype=bool)
    unpacked = np.unpackbits(np.frombuffer(bits, dtype=np.uint8), bitorder="little")
    return unpacked[chunk.offset : chunk.offset + len(chunk)].astype(bool)


def _nulls(col) -> np.ndarray:
    """Where a (chunked) column is null, as one numpy bool array."""
    return _concat([~_valid(c) for c in col.chunks], bool)


def _fixed_bytes(strings) -> np.ndarray:
    """A string array as a numpy ``S<width>`` array, without a Python object per row."""
    n = len(strings)
    if n == 0:
        return np.empty(0, dtype="S1")
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32, count=n + 1, offset=strings.offset * 4)
    lengths = np.diff(offsets).astype(np.int64)
    width = max(int(lengths.max()), 1)
    values = strings.buffers()[2]
    data = np.empty(0, dtype=np.uint8) if values is None else np.frombuffer(values, dtype=np.uint8)
    if int(lengths.min()) == width:  # the common case: one width, so the values lie back to back
        return data[int(offsets[0]) : int(offsets[0]) + n * width].view(f"S{width}")  # a view: the caller copies
    # Scatter each value's bytes to its row's slot: memory grows with the bytes, not rows x width.
    start = int(offsets[0])
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    dest = rows * width + np.arange(len(rows), dtype=np.int64) - (offsets[:-1].astype(np.int64) - start)[rows]
    out = np.zeros(n * width, dtype=np.uint8)
    out[dest] = data[start : start + len(rows)]
    return out.view(f"S{width}")


def _concat(parts: list[np.ndarray], empty_dtype) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype=empty_dtype)
