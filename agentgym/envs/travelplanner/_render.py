"""Render result rows as text tables in the layout of pandas ``DataFrame.to_string(index=False)``.

TravelPlanner's reference information and its official tools show tables that way, so agents
trained on either see the same text here. pandas is not a runtime dependency; a test checks
this renderer against pandas on the real database.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["render_table"]

_FLOAT_DIGITS = 6  # pandas' default display precision
_ESCAPES = str.maketrans({"\t": "\\t", "\r": "\\r", "\n": "\\n"})  # shown escaped, as pandas does


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], index: Sequence[int] | None = None) -> str:
    """Right-align each column to its widest cell, one space between columns.

    As in pandas, a numeric column's header gets one extra space of padding; with an
    ``index`` (row labels, left-aligned in front, as ``to_string()`` shows them) every cell does.
    """
    cells = [_format_column([row[i] for row in rows]) for i in range(len(columns))]
    pad = index is not None
    widths = [max(len(name) + _is_numeric(rows, i), max(map(len, col), default=0) + pad)
              for i, (name, col) in enumerate(zip(columns, cells))]
    labels = [str(i) for i in index] if index is not None else None
    lead = max(map(len, labels), default=0) if labels is not None else 0
    header = " ".join(name.rjust(w) for name, w in zip(columns, widths))
    lines = [" " * lead + " " + header if labels is not None else header]
    for r in range(len(rows)):
        line = " ".join(col[r].rjust(w) for col, w in zip(cells, widths))
        lines.append(labels[r].ljust(lead) + " " + line if labels is not None else line)
    return "\n".join(lines)


def _is_numeric(rows: Sequence[Sequence[Any]], i: int) -> int:
    return int(bool(rows) and all(type(r[i]) in (int, float) for r in rows))


def _format_column(values: list[Any]) -> list[str]:
    if values and all(type(v) is float for v in values):
        return _format_floats(values)
    return [str(v).translate(_ESCAPES) for v in values]


def _format_floats(values: list[float]) -> list[str]:
    # Fixed precision, then drop trailing zeros the whole column shares, keeping one decimal.
    texts = ["NaN" if math.isnan(v) else f"{v:.{_FLOAT_DIGITS}f}" for v in values]
    numeric = [i for i, t in enumerate(texts) if t != "NaN"]
    trim = _FLOAT_DIGITS - 1
    for i in numeric:
        t = texts[i]
        trailing = len(t) - len(t.rstrip("0"))
        trim = min(trim, trailing)
        if trim == 0:
            break
    if trim:
        for i in numeric:
            texts[i] = texts[i][:-trim]
    return texts
