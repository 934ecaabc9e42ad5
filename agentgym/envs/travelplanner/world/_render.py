"""Render result rows as text tables in the layout of pandas ``DataFrame.to_string``.

TravelPlanner's reference information and its official tools show tables that way, so agents
trained on either see the same text here. pandas is not a runtime dependency; a test checks
this renderer byte for byte against pandas on the real database.

The layout: each column right-aligned to its widest cell, one space between columns; a
numeric column's header gets one extra space of padding; floats are printed with 6 decimals,
then the trailing zeros every value of the column shares are dropped (keeping one); tabs and
newlines inside cells are shown escaped. With ``index`` (row labels, as ``to_string()`` with
the index prints them) the labels come first, left-aligned, and every cell gets one more space.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["render_table"]

_FLOAT_DIGITS = 6  # pandas' default display precision
_FLOAT_FORMAT = f"%.{_FLOAT_DIGITS}f"
_ESCAPES = str.maketrans({"\t": "\\t", "\r": "\\r", "\n": "\\n"})


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], index: Sequence[int] | None = None) -> str:
    pad = index is not None
    padded = []
    for name, values in zip(columns, zip(*rows)):
        cells, numeric = _format_column(values)
        width = max(len(name) + numeric, max(map(len, cells)) + pad)
        padded.append([name.rjust(width), *(c.rjust(width) for c in cells)])
    lines = list(map(" ".join, zip(*padded)))
    if index is not None:
        labels = ["", *map(str, index)]
        lead = max(map(len, labels))
        lines = [f"{label.ljust(lead)} {line}" for label, line in zip(labels, lines)]
    return "\n".join(lines)


def _format_column(values: Sequence[Any]) -> tuple[list[str], int]:
    kinds = set(map(type, values))
    if kinds == {float}:
        return _format_floats(values), 1
    if kinds == {int}:
        return list(map(str, values)), 1
    cells = list(map(str, values))
    joined = "".join(cells)
    if "\n" in joined or "\t" in joined or "\r" in joined:
        cells = [c.translate(_ESCAPES) for c in cells]
    return cells, 0


def _format_floats(values: Sequence[float]) -> list[str]:
    texts = [_FLOAT_FORMAT % v if v == v else "NaN" for v in values]  # v != v only for NaN
    numeric = [t for t in texts if t != "NaN"]
    trim = min((len(t) - len(t.rstrip("0")) for t in numeric), default=0)
    trim = min(trim, _FLOAT_DIGITS - 1)
    if not trim:
        return texts
    return [t[:-trim] if t != "NaN" else t for t in texts]
