"""Read the official CSV tables the way the official loader's ``pd.read_csv`` sees them.

pandas decides each column's type from the whole column (int, float if any value is
fractional or missing, else str) and treats a fixed set of strings as missing. The official
tools then drop every row with a missing value. Reproducing both keeps our rows, and so our
tool output and evaluator verdicts, equal to the official ones without depending on pandas.
Where pandas would read a damaged file without a word (a short row, a cut quote, a number column
turned to text), ``read_table`` refuses it instead (``_integrity``).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.envs.travelplanner.world._integrity import MAX_CELL_CHARS, Rule, damaged, not_utf8, unreadable
from agentgym.errors import DataError, short_repr

__all__ = ["read_table", "column_converter", "csv_problem", "width_problem", "NA_STRINGS", "NUMBER"]

# pandas' default ``na_values``: these cells read as NaN.
NA_STRINGS = frozenset(
    ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
     "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
)
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|Infinity)")
NUMBER = f"{_INT.pattern}|{_FLOAT.pattern}"
"""A cell pandas reads as a number (int or float)."""


def read_table(path: Path, columns: Sequence[str], *, dropna: bool, numeric: Sequence[str] = (),
               rules: Mapping[str, Rule] | None = None, require_rows: bool = False) -> list[tuple[Any, ...]]:
    """Rows of ``columns`` (in that order) with pandas-typed values; None marks a missing cell.

    Each row is preceded by its pandas index label: its position among the file's rows, counted
    before rows are dropped. The file is checked as ``_integrity`` describes: ``numeric`` columns
    must read as numbers, each kept row's value in a ``rules`` column must pass its rule, and with
    ``require_rows`` some row must be kept.
    """
    header, raw, lines = _read_raw(path)
    missing = [c for c in columns if c not in header]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {header}")
    parsers = [_column_parser(raw, j) for j in range(len(header))]
    for name in numeric:
        _check_numeric(path, raw, lines, header.index(name), name, parsers)
    labelled = enumerate(raw)
    if dropna:
        labelled = ((i, r) for i, r in labelled if not any(cell in NA_STRINGS for cell in r))
    picks = [header.index(c) for c in columns]
    rows = [(i, *(parsers[j](r[j]) for j in picks)) for i, r in labelled]
    if require_rows and not rows:
        raise damaged(path, None, "every row has a missing cell, and the official loader drops those" if raw
                      else "the file has no rows after the header")
    for name, (accept, problem) in (rules or {}).items():
        k = 1 + columns.index(name)
        bad = next((row for row in rows if row[k] is not None and not accept(row[k])), None)
        if bad is not None:
            raise damaged(path, lines[bad[0]], f"column {name!r} holds {short_repr(bad[k])}, which {problem}")
    return rows


def _read_raw(path: Path) -> tuple[list[str], list[list[str]], list[int]]:
    """The header, the rows (blank lines skipped, as pandas does) and the line each row starts on."""
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise not_utf8(path, data, exc) from None
    del data
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[list[str]] = []
    lines: list[int] = []
    start = 1
    try:
        header = next(reader, None)
        if not header:
            raise DataError(f"{path} is empty; expected a header row")
        width, start = len(header), reader.line_num + 1
        for r in reader:
            if r:
                if len(r) != width:
                    raise damaged(path, start, width_problem(len(r), width))
                if max(map(len, r)) > MAX_CELL_CHARS:
                    raise damaged(path, start, f"a cell holds more than {MAX_CELL_CHARS:,} characters")
                rows.append(r)
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise damaged(path, start, csv_problem(exc)) from None
    return header, rows, lines


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise unreadable(path, exc) from None


def width_problem(n: int, width: int) -> str:
    cut = " (a file cut short, or a lost separator)" if n < width else ""
    return f"the row has {n} fields, the header has {width}{cut}"


def csv_problem(exc: csv.Error) -> str:
    """What Python's CSV reader found, as a user would say it."""
    text = str(exc)
    if "field larger than field limit" in text:
        return f"a cell holds more than {MAX_CELL_CHARS:,} characters"
    if "unexpected end of data" in text or "EOF" in text:
        return "a quoted value runs to the end of the file (a file cut short, or a stray quote)"
    return f"not valid CSV ({text})"


def _check_numeric(path: Path, rows: list[list[str]], lines: list[int], j: int, name: str, parsers) -> None:
    """A column the evaluator computes with must be typed a number by pandas: a single other cell,
    even in a row ``dropna()`` drops, would make it text."""
    if parsers[j].kind != "str":
        return
    for i, r in enumerate(rows):
        cell = r[j]
        if cell not in NA_STRINGS and not (_INT.fullmatch(cell) or _FLOAT.fullmatch(cell)):
            raise damaged(path, lines[i], f"column {name!r} holds {short_repr(cell)}, which is not a number "
                                          f"(the evaluator computes with this column)")


def column_converter(values: Any) -> Any:
    """The converter pandas' type inference would pick for a column holding ``values``.

    ``values`` may be the whole column or just its distinct cells; missing cells map to None.
    """
    present = [v for v in values if v not in NA_STRINGS]
    has_na = len(present) < len(values)
    if present and all(_INT.fullmatch(v) for v in present):
        return _na_or(float) if has_na else _na_or(int)
    if present and all(_FLOAT.fullmatch(v) for v in present):
        return _na_or(float)
    return _na_or(str)


def _column_parser(rows: list[list[str]], j: int):
    return column_converter({r[j] for r in rows})


def _na_or(convert):
    def parse(cell: str):
        return None if cell in NA_STRINGS else convert(cell)

    parse.kind = convert.__name__  # type: ignore[attr-defined]
    return parse
