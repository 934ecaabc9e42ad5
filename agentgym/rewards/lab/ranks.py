"""Rank correlations of two sequences, ties handled as scipy handles them (scipy is not a dependency).

* :func:`spearman` is ``scipy.stats.spearmanr``'s rho: the Pearson correlation of the average
  ranks (tied values share the mean of their ranks);
* :func:`kendall` is ``scipy.stats.kendalltau``'s default tau-b:
  ``(concordant - discordant) / sqrt((n0 - ties_x) * (n0 - ties_y))``.

Both are NaN when either sequence is constant (the correlation is undefined), as in scipy. They
are O(n log n) and O(n^2): groups of rollouts are small (GRPO's G is 4 to 64).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["spearman", "kendall", "average_ranks"]


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the mean of the ranks they span (scipy's ``rankdata``)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mean = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = mean
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho of ``x`` and ``y`` (NaN when either is constant or they have fewer than 2 items)."""
    _check(x, y)
    return _pearson(average_ranks(x), average_ranks(y))


def kendall(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of ``x`` and ``y`` (NaN when either is constant or they have fewer than 2 items)."""
    _check(x, y)
    n = len(x)
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 or dy == 0:
                ties_x += dx == 0
                ties_y += dy == 0
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - ties_x) * (pairs - ties_y))
    return (concordant - discordant) / denominator if denominator > 0 else math.nan


def _pearson(a: Sequence[float], b: Sequence[float]) -> float:
    n = len(a)
    if n < 2:
        return math.nan
    mean_a, mean_b = sum(a) / n, sum(b) / n
    cov = sum((p - mean_a) * (q - mean_b) for p, q in zip(a, b))
    var_a = sum((p - mean_a) ** 2 for p in a)
    var_b = sum((q - mean_b) ** 2 for q in b)
    if var_a == 0 or var_b == 0:
        return math.nan
    return max(-1.0, min(1.0, cov / math.sqrt(var_a * var_b)))


def _check(x: Sequence[float], y: Sequence[float]) -> None:
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} and {len(y)})")
