"""The seeds of the learning tests: CI runs the first, ``pytest -m learning_slow`` runs all five.

A learning test takes ``seed`` from ``learning_seeds()`` (``@pytest.mark.parametrize`` or a fixture's ``params``).
Seed 0 is collected by the plain suite and by ``-m learning``; seeds 1-4 carry ``extra_seed``,
which ``tests/conftest.py`` deselects unless ``-m`` names ``learning_slow``. The margins the tests
assert come from the five seeds (each test's docstring gives them)."""

from __future__ import annotations

import pytest

SEEDS = (0, 1, 2, 3, 4)


def learning_seeds() -> list:
    marks = [pytest.mark.learning, pytest.mark.learning_slow]
    return [pytest.param(seed, id=f"seed{seed}", marks=marks + ([pytest.mark.extra_seed] if seed != SEEDS[0] else []))
            for seed in SEEDS]

