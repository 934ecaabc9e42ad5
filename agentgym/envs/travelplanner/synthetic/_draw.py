"""Small random helpers shared by the table generators."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pick(rng: np.random.Generator, words: Sequence[str], m: int) -> list[str]:
    """m words drawn uniformly with replacement."""
    return [words[i] for i in rng.integers(len(words), size=m).tolist()]


def scaled_probability(weight: np.ndarray, mean: float) -> np.ndarray:
    """min(1, c * weight) with c found by bisection so the probabilities average ``mean``."""
    if len(weight) == 0 or mean <= 0.0:
        return np.zeros(len(weight))
    lo, hi = 0.0, 1.0 / max(float(weight.min()), 1e-12)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if np.minimum(1.0, mid * weight).mean() < mean:
            lo = mid
        else:
            hi = mid
    return np.minimum(1.0, hi * weight)
