"""What opening a world checks, and the errors that name the file, the line and the fix.

The first open of a database (the one that builds its cache) checks what the evaluator and the
tools rely on; a cached open has nothing left to check. A file that fails is a ``DataError``:

- every column they read is present, and the accommodations, restaurants and attractions each
  keep a row (a world may lack flights or roads);
- every row is as wide as the header (a short row is a file cut short or a lost separator:
  the official ``pd.read_csv`` pads it and ``dropna()`` drops it without a word), and no quoted
  value runs to the end of the file;
- the columns the evaluator computes with read as numbers (``NUMERIC``), a listing's maximum
  occupancy is at least 1 (the cost divides by it), and a distance reads as ``"1,144 km"``;
- every city of ``citySet.txt`` has a state, and every state is in ``stateSet.txt``;
- no cell holds more than ``MAX_CELL_CHARS`` characters, and no flight number more than
  ``MAX_FLIGHT_NUMBER_BYTES`` bytes (the flight numbers are stored at one fixed width). The real
  release's longest cell has 305 characters and its flight numbers 8.

A disk fault while reading (a file replaced by a folder, no permission, bytes that are not UTF-8)
is a ``DataError`` naming the file too; one while writing the cache is a ``StorageError``.
"""

from __future__ import annotations

import errno as errnos
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from agentgym.errors import DataError, StorageError

__all__ = ["MAX_CELL_CHARS", "MAX_FLIGHT_NUMBER_BYTES", "NUMERIC", "RULES", "Rule", "damaged", "unreadable",
           "not_a_file", "not_utf8", "cache_unwritable", "km_value"]

MAX_CELL_CHARS = 4096
MAX_FLIGHT_NUMBER_BYTES = 32
NUMERIC = {
    "accommodations": ("price", "minimum nights", "maximum occupancy"),
    "restaurants": ("Average Cost",),
    "flights": ("Price",),
}
"""Per table, the columns the evaluator computes with (costs, nights, the rooms a group needs)."""


class Rule(NamedTuple):
    """A check of each kept row's (pandas-typed) value in one column."""

    accept: Callable[[Any], bool]
    problem: str  # what a refused value does, as in "holds 0, which <problem>"


RULES = {
    "accommodations": {"maximum occupancy": Rule(lambda v: v >= 1, "is below 1 (the cost divides by it)")},
    "distances": {"distance": Rule(lambda v: km_value(str(v)), "does not read as a distance such as '1,144 km'")},
}
_RESTORE = "restore the file from the TravelPlanner release"
_FIX = f"{_RESTORE}, or correct that line"


def damaged(path: Path, line: int | None, problem: str) -> DataError:
    """A file whose content the evaluator or the tools cannot rely on."""
    if line is None:
        return DataError(f"{path}: {problem}; {_RESTORE}")
    return DataError(f"{path}, line {line:,}: {problem}; {_FIX}")


def unreadable(path: Path, exc: OSError) -> DataError:
    """A database file the disk would not give us."""
    if isinstance(exc, FileNotFoundError):
        return DataError(f"missing database file {path}")
    if isinstance(exc, IsADirectoryError):
        return not_a_file(path, "a folder")
    if isinstance(exc, PermissionError):
        return DataError(f"cannot read {path}: permission denied; make it readable (chmod a+r)")
    return DataError(f"cannot read {path}: {exc.strerror or exc}; check the disk, then {_RESTORE}")


def not_a_file(path: Path, what: str) -> DataError:
    return DataError(f"{path} is {what}; expected the database file there ({_RESTORE})")


def not_utf8(path: Path, data: bytes, exc: UnicodeDecodeError, first_line: int = 1) -> DataError:
    """A file that is not UTF-8 text; ``exc`` was raised decoding ``data``, which starts at ``first_line``."""
    line = first_line + data[: exc.start].count(b"\n")
    bad = data[exc.start : exc.start + 1].hex()
    return DataError(f"{path}, line {line:,}: byte 0x{bad} is not UTF-8 text; save the file as UTF-8 "
                     f"(e.g. iconv -f latin1 -t utf-8), or {_RESTORE}")


def cache_unwritable(folder: Path, exc: OSError) -> StorageError:
    """The cache could not be written: a full disk, no permission, an I/O error."""
    code = errnos.errorcode.get(exc.errno or 0)
    reason = "the disk is full" if exc.errno == errnos.ENOSPC else (exc.strerror or str(exc))
    fix = {errnos.ENOSPC: "free space there", errnos.EACCES: "make it writable",
           errnos.EPERM: "make it writable"}.get(exc.errno or 0, "check that disk")
    return StorageError(f"cannot write the cache under {folder}: {reason}{f' ({code})' if code else ''}; "
                        f"{fix}, or set AGENTGYM_CACHE_DIR (or cache_dir=) to another folder",
                        errno=exc.errno, path=str(folder))


def km_value(text: str) -> bool:
    """Whether a distance cell reads as a number once ``km`` and the thousands commas go, as the
    evaluator and GoogleDistanceMatrix read it."""
    try:
        float(text.replace("km", "").replace(",", "").strip())
    except ValueError:
        return False
    return True
